"""Shipped bugs of the class outside the engines: each is found at the read
that fails, at the severity of how surely it runs, and each is executed to
show Python fails there too.

Optimisers are driven by a training loop (``zero_grad(); step()``): torch's
``Optimizer.zero_grad`` reads ``self.defaults``, which only
``Optimizer.__init__`` sets. A wrapper that skips it crashes on the first
iteration."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.report._finding import Finding
from vllm_sp_base._audit.sources._cache import Cache

# The shape of the Lookahead wrappers reported in
# WiraDKP/pytorch_speaker_embedding_for_diarization#7 ("'Lookahead' object has
# no attribute 'defaults'" at optimizer.zero_grad()) and shipped by several
# optimiser collections before torch read ``defaults`` there: the wrapper
# shares its inner optimiser's param_groups and state but not its defaults.
LOOKAHEAD = textwrap.dedent("""
    from collections import defaultdict

    from torch.optim import Optimizer


    class Lookahead(Optimizer):
        def __init__(self, optimizer, k=5, alpha=0.5):
            self.optimizer = optimizer
            self.k = k
            self.alpha = alpha
            self.param_groups = optimizer.param_groups
            self.state = defaultdict(dict)

        def step(self, closure=None):
            return self.optimizer.step(closure)
""")


def _audited(*paths: Path) -> list[Finding]:
    return audit([str(p) for p in paths], cache=Cache(None, False)).findings


def _linear() -> torch.nn.Linear:
    model = torch.nn.Linear(2, 2)
    model(torch.ones(1, 2)).sum().backward()
    return model


def test_named_optimizer_of_torch_distributed(tmp_path: Path) -> None:
    """pytorch/pytorch#147357: ``_NamedOptimizer.zero_grad()`` fails on the
    ``defaults`` its ``__init__`` never sets (the installed torch's own file)."""
    from torch.distributed.optim import named_optimizer

    source = Path(named_optimizer.__file__)
    copy = tmp_path / "named_optimizer.py"
    shutil.copy(source, copy)  # audited alone; torch itself resolves from the installed packages
    [found] = [f for f in _audited(copy) if f.class_name.endswith("_NamedOptimizer")]
    assert (found.attribute, found.severity, found.method) == (
        "defaults", "error", "torch.optim.optimizer.Optimizer.zero_grad")

    optimizer = named_optimizer._NamedOptimizer(_linear().named_parameters(), torch.optim.SGD, lr=0.1)
    optimizer.step()
    with pytest.raises(AttributeError, match="no attribute 'defaults'"):
        optimizer.zero_grad()


def test_lookahead_wrapper_without_defaults(tmp_path: Path) -> None:
    module = tmp_path / "lookahead.py"
    module.write_text(LOOKAHEAD)
    [found] = _audited(module)
    assert (found.class_name, found.attribute, found.severity, found.method) == (
        "lookahead.Lookahead", "defaults", "error", "torch.optim.optimizer.Optimizer.zero_grad")

    namespace: dict[str, object] = {}
    exec(compile(LOOKAHEAD, str(module), "exec"), namespace)  # noqa: S102 - the test's own source
    wrapper = namespace["Lookahead"](torch.optim.SGD(_linear().parameters(), lr=0.1))  # type: ignore[operator]
    with pytest.raises(AttributeError, match="'Lookahead' object has no attribute 'defaults'"):
        wrapper.zero_grad()


def test_lookahead_wrapper_that_shares_defaults_is_clean(tmp_path: Path) -> None:
    module = tmp_path / "lookahead.py"
    module.write_text(LOOKAHEAD.replace(
        "self.state = defaultdict(dict)", "self.state = defaultdict(dict)\n        self.defaults = optimizer.defaults"))
    assert _audited(module) == []
