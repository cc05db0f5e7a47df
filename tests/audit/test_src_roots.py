"""A project's own import roots, as ruff's ``src = [".", "src"]``: `audit .`
at the top of a src layout resolves the project's own bases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_sp_base._main import main

from .skipping import BASE, MODEL

WITH_NOQA = MODEL + """

class Quiet(Base):  # noqa: SPB001
    def __init__(self):
        nn.Module.__init__(self)
"""


def _project(top: Path, src: str = "src", config: str | None = "[tool.vllm-sp-base]\n") -> Path:
    package = top / src / "pkg" if src else top / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    (package / "model.py").write_text(WITH_NOQA)
    if config is not None:
        (top / "pyproject.toml").write_text(config)
    return top


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["audit", "--no-cache", "--format", "json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _found(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["class"], f["attribute"]) for f in data["findings"]]


@pytest.mark.parametrize("config", ["[tool.vllm-sp-base]\n", None], ids=["configured", "no-config"])
def test_audit_dot_at_a_src_layout_resolves_the_projects_own_bases(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    config: str | None,
) -> None:
    top = _project(tmp_path / "proj", config=config)
    for where, path in ((top, "."), (tmp_path, str(top)), (top / "src" / "pkg", str(top))):
        monkeypatch.chdir(where)
        code, data, err = _json(capsys, path)
        # Named as imported (pkg.model, not src.pkg.model), the base found under src/;
        # the noqa on a checked class is used, not "unused".
        assert _found(data) == [("pkg.model.Model", "flag")], (where, err)
        assert data["unresolved"] == data["unused_noqa"] == [] and data["suppressed"] == 1
        assert code == 1
    # The baseline written from the top matches the one written from src/.
    monkeypatch.chdir(top)
    assert main(["audit", "--no-cache", ".", "--write-baseline", "b.json"]) == 0
    capsys.readouterr()
    assert json.loads((top / "b.json").read_text())["fingerprints"] == ["SPB001:pkg.model.Model:flag"]
    assert main(["audit", "--no-cache", "src", "--baseline", "b.json"]) == 0


def test_a_package_named_src_is_no_root_and_src_can_be_configured(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = _project(tmp_path, src="lib")
    monkeypatch.chdir(top)
    code, data, err = _json(capsys, ".")  # lib/ is not among ruff's defaults: as before
    assert _found(data) == [] and "module pkg.base not found" in data["unresolved"][0]["reason"]
    (top / "pyproject.toml").write_text('[tool.vllm-sp-base]\nsrc = ["lib"]\n')
    assert _found(_json(capsys, ".")[1]) == [("pkg.model.Model", "flag")]
    (top / "pyproject.toml").write_text('[tool.vllm-sp-base]\nsrc = []\n')  # none: only the audited roots
    assert _found(_json(capsys, "lib")[1]) == [("pkg.model.Model", "flag")]
    assert _json(capsys, ".")[1]["unresolved"]
    # A src/ with __init__.py is a package: its modules are src.pkg.*, it is no root.
    other = _project(tmp_path / "other")
    (other / "src" / "__init__.py").write_text("")
    code, data, _ = _json(capsys, str(other))
    assert _found(data) == [] and [u["class"] for u in data["unresolved"]] == ["src.pkg.model.Model"]
    (top / "pyproject.toml").write_text('[tool.vllm-sp-base]\nsrc = "src"\n')
    code = main(["audit", "--no-cache", "."])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and "src must be a list of folders" in err and err.count("\n") == 1


def test_show_settings_names_the_source_roots_and_what_a_walk_always_skips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = _project(tmp_path / "proj")
    monkeypatch.chdir(top / "src")
    assert main(["audit", "--show-settings", "pkg"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"src: {top}, {top / 'src'}" in lines  # under the config's folder, not the audited one
    assert ("always skipped by a walk: names starting with '.' (a path given by name is read); "
            ".gitignore is not read") in lines
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    assert "Names starting with '.' are always skipped" in " ".join(capsys.readouterr().out.split())
    # No PATH: the installed vLLM is audited, no project's roots with it.
    assert main(["audit", "--show-settings"]) == 0
    assert "src: none" in capsys.readouterr().out.splitlines()


def test_a_cached_run_follows_the_source_roots(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The roots are part of what a run's record is filed under: a change of
    # them (configured, or src/ becoming a package) is never answered by the
    # record of the other.
    top = _project(tmp_path / "proj")
    monkeypatch.chdir(top)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    runs = []
    for config in ("[tool.vllm-sp-base]\n", '[tool.vllm-sp-base]\nsrc = []\n', "[tool.vllm-sp-base]\n"):
        (top / "pyproject.toml").write_text(config)
        runs.append(_found(_json(capsys, *cache, ".")[1]))
    assert runs == [[("pkg.model.Model", "flag")], [], [("pkg.model.Model", "flag")]]
    (top / "src" / "__init__.py").write_text("")
    assert _json(capsys, *cache, ".")[1]["unresolved"]
    (top / "src" / "__init__.py").unlink()
    assert _found(_json(capsys, *cache, ".")[1]) == [("pkg.model.Model", "flag")]


def test_a_namespace_package_is_named_from_above_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # megatron/ has no __init__.py (PEP 420) and its code imports megatron.core.*:
    # modules are megatron.pkg.*, not pkg.*, so its own bases resolve.
    package = tmp_path / "wheel" / "ns" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    (package / "model.py").write_text(MODEL.replace("from pkg.base", "from ns.pkg.base"))
    monkeypatch.chdir(tmp_path)
    for given in (package.parent, package, package / "model.py"):
        code, data, err = _json(capsys, str(given))
        assert _found(data) == [("ns.pkg.model.Model", "flag")], (given, err)
        assert data["unresolved"] == [] and code == 1


def test_a_folder_holding_a_package_of_its_own_name_stays_a_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout: pkg/ (no __init__.py) holds the package pkg/pkg/; pkg.base is pkg/pkg/base.py.
    top = tmp_path / "pkg"
    package = top / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    (package / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    code, data, err = _json(capsys, str(top))
    assert _found(data) == [("pkg.model.Model", "flag")], err


def test_a_namespace_package_that_only_imports_itself_relatively_is_named_from_above_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # optimum/ has no __init__.py and its code says ``from ..base import Base``
    # two folders down: a climb above optimum/ that only a package allows.
    top = tmp_path / "wheel" / "ns"
    (top / "base").mkdir(parents=True)
    (top / "base" / "__init__.py").write_text(BASE)
    package = top / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(MODEL.replace("from pkg.base import Base", "from ..base import Base"))
    monkeypatch.chdir(tmp_path)
    code, data, err = _json(capsys, str(top))
    assert _found(data) == [("ns.pkg.model.Model", "flag")], err
    assert data["unresolved"] == [] and code == 1
