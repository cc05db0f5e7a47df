"""The test the series adds to vLLM's own test file of these classes
(``tests/AGENTS.md``: extend an existing file; real classes, the lightest real
path). It runs the inherited ``forward`` of a model subclass and a decoder-layer
subclass that skip their parents' ``__init__``, as Dots3 NOTE's do, in vLLM's
single-rank parallel state (its ``dist_init`` fixture), with the file's own
helpers for the modules such a subclass builds and for the sequence-parallel
collectives. Without the defaults it fails with the ``AttributeError`` of
#52172; with a default of ``True`` the collectives shard the tokens and it fails
on the token counts."""

from __future__ import annotations

import ast
import re
from typing import Final

from vllm_sp_base._upstream._names import TEST_HELPERS, TEST_MODULE_ALIAS, TEST_NAME

_MODULE = TEST_MODULE_ALIAS

ADDED_TEST: Final = f'''

class _OwnInitDecoderLayer({_MODULE}.DeepseekV32DecoderLayer):
    # Builds its own modules and skips the parent's __init__, as
    # Dots3NoteDecoderLayer does, but inherits its forward.
    def __init__(self) -> None:
        nn.Module.__init__(self)
        self.input_layernorm = _IdentityNorm()
        self.post_attention_layernorm = _IdentityNorm()
        self.self_attn = _RecordingModule()
        self.mlp = _RecordingModule()


class _OwnInitModel({_MODULE}.DeepseekV32Model):
    # As Dots3NoteModel does.
    def __init__(self) -> None:
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([_OwnInitDecoderLayer()])
        self.start_layer, self.end_layer = 0, 1
        self.aux_hidden_state_layers = ()
        self.norm = _IdentityNorm()


def {TEST_NAME}(
    monkeypatch, dist_init
):
    """A subclass that skips the parent's __init__ takes the path without
    sequence parallelism instead of raising AttributeError."""
    # The collectives shard visibly, so the sequence-parallel path would change
    # the token counts asserted below.
    _mock_sequence_parallel_collectives(monkeypatch, {_MODULE})
    model = _OwnInitModel()
    inputs_embeds = torch.arange(6, dtype=torch.float32).view(3, 2)

    hidden_states = model(None, torch.arange(3), inputs_embeds=inputs_embeds)

    torch.testing.assert_close(hidden_states, inputs_embeds)
    layer = model.layers[0]
    assert layer.self_attn.num_tokens == layer.mlp.num_tokens == 3
'''


def missing_helpers(current: str) -> list[str]:
    """What the added test reuses that the file no longer binds at module level.
    Raises SyntaxError where the file does not parse."""
    bound: set[str] = set()
    for node in ast.parse(current).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return [name for name in (*TEST_HELPERS, _MODULE, "nn", "torch") if name not in bound]


def tests_setting_the_flag(current: str, classes: set[str]) -> list[str]:
    """The file's tests that build one of ``classes`` and set
    ``use_sequence_parallel = True`` on the instance: what "an instance value
    still wins" rests on. Raises SyntaxError where the file does not parse."""
    found = []
    for node in ast.parse(current).body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        sets_true = any(
            isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is True
            and any(isinstance(t, ast.Attribute) and t.attr == "use_sequence_parallel" for t in n.targets)
            for n in ast.walk(node)
        )
        if sets_true and names & classes:
            found.append(node.name)
    return found


def extended(current: str) -> str:
    """The test file with the added test at its end; as it is if it has it already."""
    if re.search(rf"^def {TEST_NAME}\b", current, re.MULTILINE):
        return current
    newline = "\r\n" if "\r\n" in current else "\n"
    text = current if current.endswith(("\n", "\r")) or not current else current + newline
    return text + ADDED_TEST.replace("\n", newline)
