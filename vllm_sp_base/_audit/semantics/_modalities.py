"""Which inputs a multimodal model accepts, from its declarations: vLLM ties a
model class to its processing info with ``@MULTIMODAL_REGISTRY.register_processor(
Processor, info=Info, dummy_inputs=...)``, and the engine gives the model only
the modalities ``Info.get_supported_mm_limits`` returns (an image-only model
never gets a video). Read from source, only for a class whose finding runs
under a test of the modality (``if modality == "video":``).
"""

from __future__ import annotations

import ast
import functools

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._project import ClassRef
from vllm_sp_base._audit.summaries._summaries import python_name

#: The modalities vLLM's models take, as their ``embed_multimodal`` loops name
#: them (``for modality in mm_input_by_modality: if modality == "video":``).
MODALITIES = ("image", "video", "audio")
_REGISTER = "register_processor"
_LIMITS = "get_supported_mm_limits"


def supported_modalities(model: ClassModel) -> frozenset[str] | None:
    """The modalities the engine may give the class: those its registered
    processing info declares, from the first class of the MRO that registers
    one; None where that cannot be read (no registration, a computed return)."""
    for entry in model.mro:
        if not isinstance(entry, ClassRef):
            return None
        info = _registered_info(model, entry)
        if info is not None:
            return _declared(model, info)
    return None


def _registered_info(model: ClassModel, entry: ClassRef) -> ClassRef | None:
    """The ``info=`` class of ``entry``'s ``register_processor`` decorator."""
    node = _class_node(model, entry)
    if node is None:
        return None
    for decorator in node.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == _REGISTER):
            for keyword in decorator.keywords:
                # A name or a dotted name only: a call or a lambda builds the info out of sight.
                if keyword.arg == "info" and isinstance(keyword.value, (ast.Name, ast.Attribute)):
                    name = ast.unparse(keyword.value)
                    target = model.project.resolve(entry.module, name)
                    return target if isinstance(target, ClassRef) else None
    return None


def _declared(model: ClassModel, info: ClassRef) -> frozenset[str] | None:
    """The keys of the dict literal ``get_supported_mm_limits`` returns, as the
    info class (its MRO) defines it."""
    owner = ClassModel(model.project, info)
    found = owner.lookup(_LIMITS, 0)
    if found is None or found[1] is None:
        return None
    defining = owner.mro[found[0]]
    assert isinstance(defining, ClassRef)
    node = _class_node(owner, defining)
    method = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == _LIMITS), None) \
        if node is not None else None
    if method is None:
        return None
    returns = [n for n in ast.walk(method) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Dict):
        return None
    keys = [k.value if isinstance(k, ast.Constant) else None for k in returns[0].value.keys]
    names = frozenset(k for k in keys if isinstance(k, str))
    return names if len(names) == len(keys) else None


def _class_node(model: ClassModel, entry: ClassRef) -> ast.ClassDef | None:
    info = model.project.class_info(entry)
    located = model.project.module_file(entry.module)
    if info is None or located is None or not located[0]:
        return None
    data = model.project.source(located[0])
    tree = _parsed(data) if data is not None else None
    if tree is None:
        return None
    name = python_name(entry.name)
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                 and n.name == name and n.lineno == info.line), None)


@functools.lru_cache(maxsize=32)
def _parsed(data: bytes) -> ast.Module | None:
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
