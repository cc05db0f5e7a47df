"""Which inputs a multimodal model accepts, from its declarations: vLLM ties a
model class to its processor and processing info with
``@MULTIMODAL_REGISTRY.register_processor(Processor, info=Info, dummy_inputs=...)``
(looked up through the MRO: the first class that registers one wins). The
engine gives the model only the modalities ``Info.get_supported_mm_limits``
returns (an image-only model never gets a video), and only the input fields
``Processor._get_mm_fields_config`` names (it drops the other keys of the HF
processor's output). Read from source, only for a class whose finding runs
under a test of the modality (``if modality == "video":``) or of a field
(``if second_per_grid_ts is None: raise``).
"""

from __future__ import annotations

import ast

from vllm_sp_base._audit.semantics._classes import ClassModel
from vllm_sp_base._audit.semantics._parsed import class_node, method_node, module_tree
from vllm_sp_base._audit.semantics._project import ClassRef

#: The modalities vLLM's models take, as their ``embed_multimodal`` loops name
#: them (``for modality in mm_input_by_modality: if modality == "video":``;
#: some models key them in the plural, ``"videos"``).
MODALITIES = ("image", "video", "audio")
_REGISTER = "register_processor"
_LIMITS = "get_supported_mm_limits"
_FIELDS = "_get_mm_fields_config"
#: Builtins a field config may call that add no field.
_NO_FIELDS = frozenset({
    "dict", "super", "len", "int", "float", "bool", "list", "tuple", "set", "isinstance",
    "getattr", "hasattr", "max", "min", "sum", "range", "zip", "enumerate", "sorted",
})


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
    found = _registration(model, entry)
    return None if found is None else found[1]


def _registration(model: ClassModel, entry: ClassRef) -> tuple[ClassRef | None, ClassRef | None] | None:
    """(processor, info) of ``entry``'s ``register_processor`` decorator, each
    None where it is not a class the source shows; None: no decorator."""
    node = class_node(model.project, entry)
    if node is None:
        return None
    for decorator in node.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == _REGISTER):
            processor = _class_named(model, entry, decorator.args[0]) if decorator.args else None
            info = next((_class_named(model, entry, k.value) for k in decorator.keywords if k.arg == "info"), None)
            return processor, info
    return None


def _class_named(model: ClassModel, entry: ClassRef, node: ast.expr) -> ClassRef | None:
    # A name or a dotted name only: a call or a lambda builds the class out of sight.
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    target = model.project.resolve(entry.module, ast.unparse(node))
    return target if isinstance(target, ClassRef) else None


def unsupplied_fields(model: ClassModel, keys: set[str]) -> set[str]:
    """Of ``keys`` (input keys the class's methods test), those the engine
    never gives it: a field the processor a class further up the MRO registers
    names, and the processor the class gets (the first registered) does not
    (Exaone 4.5 registers Qwen2-VL's processor, which has no
    ``second_per_grid_ts``, under Qwen2.5-VL's methods that test it)."""
    processors: list[ClassRef | None] = []
    for entry in model.mro:
        if not isinstance(entry, ClassRef):
            break
        found = _registration(model, entry)
        if found is not None:
            processors.append(found[0])
        elif class_node(model.project, entry) is None:
            break  # its decorators cannot be read: what comes after may not be what the engine uses
    if len(processors) < 2 or processors[0] is None:
        return set()
    own, parents = processors[0], [p for p in processors[1:] if p is not None and p != processors[0]]
    return {
        key for key in keys
        if _supplies(model, own, key) is False and any(_supplies(model, p, key) for p in parents)
    }


def _supplies(model: ClassModel, processor: ClassRef, key: str) -> bool | None:
    """Whether ``processor``'s field config names ``key``: through its MRO's
    ``_get_mm_fields_config`` (as far as ``super()`` calls reach) and the
    functions of their modules they call; None where it cannot tell (a field
    set it does not see: another method, an imported helper, keys it copies)."""
    owner = ClassModel(model.project, processor)
    for entry in owner.mro:
        if not isinstance(entry, ClassRef):
            return None
        node = class_node(owner.project, entry)
        if node is None:
            return None
        method = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == _FIELDS), None)
        if method is None:
            continue
        tree = module_tree(owner.project, entry.module)
        if tree is None:
            return None
        named = _names_field(tree, method, key, set())
        if named is not False:
            return named
        if not any(_is_super_call(n) for n in ast.walk(method)):
            return False
    return False


def _names_field(tree: ast.Module, function: ast.FunctionDef, key: str, seen: set[str]) -> bool | None:
    """Whether ``function`` names the field ``key`` (a keyword, a string), with
    the functions of its module it calls; None where what it builds may hold
    keys it does not name."""
    seen.add(function.name)
    for node in ast.walk(function):
        if isinstance(node, ast.keyword) and node.arg == key:
            return True
        if isinstance(node, ast.Constant) and node.value == key:
            return True
        if isinstance(node, (ast.DictComp, ast.Starred)):
            return None  # keys computed, or copied from elsewhere
        if isinstance(node, ast.Dict) and None in node.keys:
            spread = [v for k, v in zip(node.keys, node.values) if k is None]
            if not all(isinstance(v, ast.Call) for v in spread):
                return None
        if isinstance(node, ast.Call):
            if any(k.arg is None and not isinstance(k.value, ast.Call) for k in node.keywords):
                return None  # ``dict(**fields)``: fields built elsewhere
            func = node.func
            if isinstance(func, ast.Name):
                if func.id in _NO_FIELDS or func.id in seen:
                    continue
                helper = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func.id), None)
                if helper is None:
                    return None  # an imported helper, a class: what it builds is out of sight
                named = _names_field(tree, helper, key, seen)
                if named is not False:
                    return named
            elif isinstance(func, ast.Attribute) and (
                    func.attr in ("update", "fromkeys")
                    or (isinstance(func.value, ast.Name) and func.value.id == "self")):
                return None  # fields merged in, or built by another method
    return False


def _is_super_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == _FIELDS
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super")


def _declared(model: ClassModel, info: ClassRef) -> frozenset[str] | None:
    """The keys of the dict literal ``get_supported_mm_limits`` returns, as the
    info class (its MRO) defines it."""
    owner = ClassModel(model.project, info)
    found = owner.lookup(_LIMITS, 0)
    if found is None or found[1] is None:
        return None
    defining = owner.mro[found[0]]
    assert isinstance(defining, ClassRef)
    method = method_node(owner.project, defining, _LIMITS)
    if method is None:
        return None
    returns = [n for n in ast.walk(method) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Dict):
        return None
    keys = [k.value if isinstance(k, ast.Constant) else None for k in returns[0].value.keys]
    names = frozenset(k for k in keys if isinstance(k, str))
    return names if len(names) == len(keys) else None
