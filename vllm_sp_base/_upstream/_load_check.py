"""The third patch: a load-time check that no module reads the class default
while the module around it uses sequence parallelism.

The defaults turn a loud ``AttributeError`` into the non-SP path. Where the
model around such a module shards its hidden states for SP, that path gives
wrong results, silently; this check makes it one clear error naming the
module, once, after the model is built (one walk over ``named_modules()``).
A module that sets the flag itself, to either value, is never questioned:
only the state the defaults introduced is.
"""

from __future__ import annotations

import ast
from typing import Final

from vllm_sp_base._upstream._contract_module import CONTRACT_MODULE, MIXIN, SPDX_HEADER

CHECK_PATH: Final = "vllm/models/common/sequence_parallel_check.py"
CHECK_MODULE: Final = "vllm.models.common.sequence_parallel_check"
CHECK_FUNCTION: Final = "verify_sequence_parallel"
LOADER_PATH: Final = "vllm/model_executor/model_loader/base_loader.py"
CHECK_TEST_PATH: Final = "tests/models/deepseek_v32/test_sequence_parallel_check.py"


def render_check() -> str:
    return f'''{SPDX_HEADER}"""A load-time check of the sequence-parallel flags of a built model."""

from torch import nn

from {CONTRACT_MODULE} import {MIXIN}


def {CHECK_FUNCTION}(model: nn.Module) -> None:
    """Raise if a module reads a sequence-parallel flag's class default ``False``
    while the nearest module around it that set that flag itself set ``True``.

    Such a module (a subclass whose ``__init__`` skips its parent's) takes the
    non-sequence-parallel path inside a model that shards its hidden states,
    which gives wrong results without an error. A module that sets the flag
    itself, to either value, is never questioned.
    """
    for flag in ("use_sequence_parallel", "use_sequence_parallel_moe"):
        _verify_flag(model, flag)


def _verify_flag(model: nn.Module, flag: str) -> None:
    decided: dict[str, bool] = {{}}  # module name -> the value it set itself
    for name, module in model.named_modules():
        if flag in vars(module):
            decided[name] = bool(vars(module)[flag])
            continue
        if not isinstance(module, {MIXIN}):
            continue
        enclosing = name
        while enclosing:
            enclosing = enclosing.rpartition(".")[0]
            if decided.get(enclosing) is True:
                outer = type(model.get_submodule(enclosing)).__name__
                raise ValueError(
                    f"{{name}} ({{type(module).__name__}}) never sets {{flag}} and "
                    f"reads the class default False, but {{enclosing or 'the model'}} "
                    f"({{outer}}) sets it True: its forward would take the path "
                    f"without sequence parallelism. Set self.{{flag}} in "
                    f"{{type(module).__name__}}.__init__ or call its parent's __init__."
                )
            if enclosing in decided:
                break
'''


def check_test(layer: tuple[str, str]) -> str:
    """The check against a subclass of the real ``layer`` ((module, class))."""
    module, name = layer
    imports = "".join(sorted([f"from {module} import {name}\n",
                              f"from {CHECK_MODULE} import {CHECK_FUNCTION}\n"]))
    return f'''{SPDX_HEADER}"""{CHECK_FUNCTION}: a module reading the class default inside an SP model."""

import pytest
import torch

{imports}


class _SkipsInit({name}):
    def __init__(self) -> None:
        torch.nn.Module.__init__(self)


class _DecidesItself({name}):
    def __init__(self, use_sequence_parallel: bool) -> None:
        torch.nn.Module.__init__(self)
        self.use_sequence_parallel = use_sequence_parallel


class _Model(torch.nn.Module):
    def __init__(self, use_sequence_parallel: bool, *layers: torch.nn.Module) -> None:
        super().__init__()
        self.use_sequence_parallel = use_sequence_parallel
        self.layers = torch.nn.ModuleList(layers)


def test_a_layer_on_the_default_inside_an_sp_model_is_named():
    model = _Model(True, _DecidesItself(True), _SkipsInit())
    with pytest.raises(ValueError, match=r"layers\\.1 \\(_SkipsInit\\) never sets"):
        {CHECK_FUNCTION}(model)


@pytest.mark.parametrize(
    "layers",
    [
        (_DecidesItself(True), _DecidesItself(True)),
        (_DecidesItself(True), _DecidesItself(False)),
    ],
)
def test_layers_that_decide_themselves_pass(layers):
    {CHECK_FUNCTION}(_Model(True, *layers))


def test_the_default_inside_a_model_without_sp_passes():
    {CHECK_FUNCTION}(_Model(False, _SkipsInit(), _SkipsInit()))
    {CHECK_FUNCTION}(_SkipsInit())
'''


def add_call(source: str) -> str | None:
    """``base_loader.py`` calling the check in ``BaseModelLoader.create_model``,
    right after ``initialize_model``; None where the loader has another shape."""
    if f"{CHECK_FUNCTION}(model)" in source:
        return source
    tree = ast.parse(source)
    loader = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BaseModelLoader"),
                  None)
    method = next((n for n in (loader.body if loader else []) if isinstance(n, ast.FunctionDef)
                   and n.name == "create_model"), None)
    created = next(
        (n for n in ast.walk(method) if isinstance(n, ast.Assign) and len(n.targets) == 1
         and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "model"
         and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
         and n.value.func.id == "initialize_model"),
        None,
    ) if method else None
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
               and n.module.split(".")[0] == "vllm" and not n.level]
    if created is None or created.end_lineno is None or not imports:
        return None
    lines = source.splitlines(keepends=True)
    indent = lines[created.lineno - 1][: created.col_offset]
    lines.insert(created.end_lineno, f"{indent}{CHECK_FUNCTION}(model)\n")
    # isort's place among the ``from vllm...`` imports (vLLM sorts them by module).
    following = next((n for n in imports if (n.module or "").lower() > CHECK_MODULE), None)
    where = following.lineno - 1 if following else (imports[-1].end_lineno or imports[-1].lineno)
    lines.insert(where, f"from {CHECK_MODULE} import {CHECK_FUNCTION}\n")
    return "".join(lines)
