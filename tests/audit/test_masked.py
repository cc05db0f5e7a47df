"""A read that a sure failure before it hides is still reported (it is real:
fix the first and it fails next), and says which read raises first."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.report._finding import Finding
from vllm_sp_base._audit.report._text import grouped
from vllm_sp_base._audit.sources._cache import Cache

SOURCE = textwrap.dedent("""
    from torch import nn

    class Base(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.early = cfg.early
            self.use_dsa = cfg.use_dsa
            self.dense = cfg.dense
            self.head = nn.Identity()
            self.scales = {}

        def forward(self, x, batch):
            if batch.tbo:
                x = x + self.early        # before the sure failure: it may run
            if self.use_dsa:              # every forward fails here
                x = x * 2
            if batch.tbo:
                x = x + self.dense        # after it: never reached
            return x

        def load_weights(self, weights):
            if weights:
                self.scales.update(weights)  # another entry point: not hidden

    class Child(Base):
        def __init__(self, cfg):
            nn.Module.__init__(self)
""")


def _findings(tmp_path: Path, source: str) -> dict[str, Finding]:
    (tmp_path / "m.py").write_text(source)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    return {f.attribute: f for f in result.findings}


def test_a_read_after_a_sure_failure_says_what_fails_first(tmp_path: Path) -> None:
    found = _findings(tmp_path, SOURCE)
    said = {a: (f.severity, f.masked_by) for a, f in found.items()}
    assert said == {
        "use_dsa": ("error", None),
        "early": ("warning", None),
        "dense": ("warning", "use_dsa"),
        "scales": ("warning", None),
    }
    dense = found["dense"]
    assert dense.message.endswith("(when batch.tbo); self.use_dsa fails first on this path")
    assert dense.to_json()["masked_by"] == "use_dsa"
    text = grouped(audit([str(tmp_path)], cache=Cache(None, False)))
    assert "when batch.tbo; self.use_dsa fails first on this path)" in text


def test_building_that_surely_fails_hides_every_entry_point(tmp_path: Path) -> None:
    source = SOURCE.replace("nn.Module.__init__(self)", "nn.Module.__init__(self)\n        self.size = self.head")
    found = _findings(tmp_path, source)
    assert (found["head"].severity, found["head"].masked_by) == ("error", None)
    for attr in ("use_dsa", "early", "dense", "scales"):
        finding = found[attr]
        assert (finding.masked_by, finding.masked_while_built) == ("head", True), attr
        assert finding.message.endswith("; self.head fails first while it is built")


def test_json_says_none_where_nothing_fails_first(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    result = audit([str(tmp_path)], cache=Cache(None, False))
    data = json.loads(json.dumps([f.to_json() for f in result.findings]))
    assert {d["attribute"]: d["masked_by"] for d in data}["early"] is None
