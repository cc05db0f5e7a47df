"""Shipped bugs of the class outside the engines: each is found at the read
that fails, at the severity of how surely it runs, and each is executed to
show Python fails there too.

A transformers ``Pipeline`` that rewrites the base's ``__init__`` inline
leaves out what ``save_pretrained`` (and ``__call__``'s iterator) read:
transformers 4.36.2's ``AutomaticSpeechRecognitionPipeline`` had no
``image_processor`` (transformers#28162), fixed in 4.37.0 by calling
``super().__init__``; the releases themselves are audited under ``-m releases``.

Optimisers are driven by a training loop (``zero_grad(); step()``): torch's
``Optimizer.zero_grad`` reads ``self.defaults``, which only
``Optimizer.__init__`` sets, and wraps the class's ``step`` in a wrapper that
reads the hook dictionaries ``Optimizer.__init__`` sets. A wrapper optimiser
that skips it crashes on the first iteration; one that serves both itself
still crashes when it is checkpointed (``state_dict``).

The releases (``-m releases``, each downloaded once), seven projects:
transformers 4.36.2 / 4.37.0 (a pipeline), pytorch-optimizer 3.3.4 / 3.4.0
(``OrthoGrad``, checkpointed), torch-optimizer 0.3.0 (``Lookahead``,
checkpointed), torchcontrib 0.0.2 (``SWA``, its fix applied), gReLU 1.1.0
(``ExplaiNNTrunk``, a submodule before ``Module.__init__``, its fix applied),
adapters 1.3.0 (``TaskSpecificLinear``); and torch's own
``_NamedOptimizer``, from the installed torch."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.report._finding import Finding
from vllm_sp_base._audit.rule._examples_frameworks import INVALID as FRAMEWORK_INVALID
from vllm_sp_base._audit.sources._cache import Cache

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from upstream_releases import cache_root  # noqa: E402

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

        def state_dict(self):  # what a checkpoint saves is the inner optimiser's
            return self.optimizer.state_dict()

        def load_state_dict(self, state_dict):
            self.optimizer.load_state_dict(state_dict)
""")


# The Lookahead of timm before it set the hook dictionaries, copied by many
# projects and shipped by optimiser collections: kozistr/pytorch_optimizer#122,
# liupei101/DSCA#5, xiwenc1/TimeMIL#6, ChongQingNoSubway/PDL#1; torchcontrib's
# SWA in anthony-wang/CrabNet#36. It shares ``defaults``, so ``zero_grad``
# runs, wraps ``step``, and the wrapper fails.
LOOKAHEAD_WITH_DEFAULTS = LOOKAHEAD.replace(
    "self.state = defaultdict(dict)", "self.state = defaultdict(dict)\n        self.defaults = optimizer.defaults")
HOOKS = ("_optimizer_step_post_hooks", "_optimizer_step_pre_hooks")


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
    found = {f.attribute: f for f in _audited(copy) if f.class_name.endswith("_NamedOptimizer")}
    assert (found["defaults"].severity, found["defaults"].method, found["defaults"].masked_by) == (
        "error", "torch.optim.optimizer.Optimizer.zero_grad", None)
    # The step wrapper's reads are real too, yet zero_grad fails before it installs the wrapper.
    assert {a: f.masked_by for a, f in found.items() if a != "defaults"} == dict.fromkeys(HOOKS, "defaults")

    optimizer = named_optimizer._NamedOptimizer(_linear().named_parameters(), torch.optim.SGD, lr=0.1)
    optimizer.step()
    with pytest.raises(AttributeError, match="no attribute 'defaults'"):
        optimizer.zero_grad()


def test_lookahead_wrapper_without_defaults(tmp_path: Path) -> None:
    module = tmp_path / "lookahead.py"
    module.write_text(LOOKAHEAD)
    found = {f.attribute: f for f in _audited(module)}
    assert (found["defaults"].class_name, found["defaults"].severity, found["defaults"].method) == (
        "lookahead.Lookahead", "error", "torch.optim.optimizer.Optimizer.zero_grad")
    assert {a: f.masked_by for a, f in found.items() if a != "defaults"} == dict.fromkeys(HOOKS, "defaults")

    namespace: dict[str, object] = {}
    exec(compile(LOOKAHEAD, str(module), "exec"), namespace)  # noqa: S102 - the test's own source
    wrapper = namespace["Lookahead"](torch.optim.SGD(_linear().parameters(), lr=0.1))  # type: ignore[operator]
    with pytest.raises(AttributeError, match="'Lookahead' object has no attribute 'defaults'"):
        wrapper.zero_grad()


def _built(source: str, path: Path) -> torch.optim.Optimizer:
    namespace: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the test's own source
    wrapper = namespace["Lookahead"](torch.optim.SGD(_linear().parameters(), lr=0.1))  # type: ignore[operator]
    assert isinstance(wrapper, torch.optim.Optimizer)
    return wrapper


def test_lookahead_wrapper_without_the_step_hooks(tmp_path: Path) -> None:
    module = tmp_path / "lookahead.py"
    module.write_text(LOOKAHEAD_WITH_DEFAULTS)
    found = _audited(module)
    assert [(f.attribute, f.severity, f.entry, f.method) for f in found] == [
        (hook, "error", "zero_grad", "torch.optim.optimizer.Optimizer.profile_hook_step") for hook in HOOKS]
    assert [frame.method for frame in found[0].chain] == ["Optimizer.zero_grad", "Optimizer.profile_hook_step"]

    wrapper = _built(LOOKAHEAD_WITH_DEFAULTS, module)
    wrapper.zero_grad()  # wraps step
    with pytest.raises(AttributeError, match="'Lookahead' object has no attribute '_optimizer_step_pre_hooks'") as raised:
        wrapper.step()
    # Said at the line that raised (in the wrapper profile_hook_step defines), not at the def.
    failed_at = raised.traceback[-1]
    pre_hooks = next(f for f in found if f.attribute == "_optimizer_step_pre_hooks")
    assert (Path(pre_hooks.read_path).name, pre_hooks.read_line) == (Path(str(failed_at.path)).name, failed_at.lineno + 1)


def _clean_and_runs(source: str, tmp_path: Path) -> None:
    """No finding, and a training step runs: ``zero_grad()`` then ``step()``."""
    module = tmp_path / "lookahead.py"
    module.write_text(source)
    assert _audited(module) == []
    wrapper = _built(source, module)
    wrapper.zero_grad()
    wrapper.step()


def test_lookahead_wrapper_with_the_step_hooks_is_clean(tmp_path: Path) -> None:
    """timm's fix: the wrapper sets the hook dictionaries itself."""
    source = LOOKAHEAD_WITH_DEFAULTS.replace(
        "self.optimizer = optimizer",
        "self.optimizer = optimizer\n        self._optimizer_step_pre_hooks = {}\n"
        "        self._optimizer_step_post_hooks = {}")
    _clean_and_runs(source, tmp_path)


def test_lookahead_wrapper_with_its_own_zero_grad_is_clean(tmp_path: Path) -> None:
    """Its ``zero_grad`` is not torch's: nothing wraps ``step``."""
    source = LOOKAHEAD_WITH_DEFAULTS + textwrap.indent(textwrap.dedent("""
        def zero_grad(self, set_to_none=True):
            self.optimizer.zero_grad(set_to_none)
    """), "    ")
    _clean_and_runs(source, tmp_path)


def test_a_pipeline_saved_without_its_state_raises_where_it_is_saved() -> None:
    (example,) = [e for e in FRAMEWORK_INVALID if e.name == "transformers-pipeline-saved-without-its-state"]
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(example.source, "example.py", "exec"), namespace)  # noqa: S102 - our own example
    pipeline = namespace["SpeechPipeline"]
    assert isinstance(pipeline, type)
    with pytest.raises(AttributeError, match="'SpeechPipeline' object has no attribute 'image_processor'"):
        pipeline(len).save_pretrained("out")


def _transformers_pipelines(version: str, into: Path) -> Path:
    """transformers ``version``'s ``pipelines`` package, from its wheel
    (downloaded once into the releases cache)."""
    wheels = cache_root().parent / "wheels"
    wheel = wheels / f"transformers-{version}-py3-none-any.whl"
    if not wheel.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"transformers=={version}",
                        "-d", str(wheels)], check=True, capture_output=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(into, [n for n in archive.namelist() if n.startswith("transformers/pipelines/")])
    return into / "transformers" / "pipelines"


@pytest.mark.releases
def test_transformers_asr_pipeline_of_4_36_is_found_and_4_37_is_clean(tmp_path: Path) -> None:
    found = _audited(_transformers_pipelines("4.36.2", tmp_path / "4.36.2"))
    asr = [(f.attribute, f.severity) for f in found if f.class_name.endswith("AutomaticSpeechRecognitionPipeline")]
    assert ("image_processor", "warning") in asr
    fixed = _audited(_transformers_pipelines("4.37.0", tmp_path / "4.37.0"))
    assert not [f for f in fixed if f.class_name.endswith("AutomaticSpeechRecognitionPipeline")]


def test_an_optimizer_checkpointed_without_its_state_raises_where_it_is_saved() -> None:
    (example,) = [e for e in FRAMEWORK_INVALID if e.name == "torch-optimizer-checkpointed-without-its-state"]
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(example.source, "example.py", "exec"), namespace)  # noqa: S102 - our own example
    surgery = namespace["GradSurgery"]
    assert isinstance(surgery, type)
    optimizer = surgery(torch.optim.SGD(_linear().parameters(), lr=0.1))
    optimizer.zero_grad()
    optimizer.step()  # every iteration runs: the class serves both
    with pytest.raises(AttributeError, match="'GradSurgery' object has no attribute '_optimizer_state_dict_pre_hooks'"):
        optimizer.state_dict()


def _wheel_package(project: str, version: str, package: str, into: Path) -> Path:
    """``package`` of ``project``'s ``version`` wheel (downloaded once into the releases cache)."""
    wheels = cache_root().parent / "wheels"
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-{version}-*.whl")) if wheels.is_dir() else []
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        f"{project}=={version}", "-d", str(wheels)], check=True, capture_output=True)
        found = sorted(wheels.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as archive:
        archive.extractall(into, [n for n in archive.namelist() if n.startswith(f"{package}/")])
    return into / package


@pytest.mark.releases
def test_pytorch_optimizer_orthograd_of_3_3_4_is_found_and_3_4_0_is_clean(tmp_path: Path) -> None:
    # kozistr/pytorch_optimizer#326, fixed by #332: OrthoGrad skipped Optimizer.__init__,
    # so saving it (state_dict) raised.
    found = _audited(_wheel_package("pytorch-optimizer", "3.3.4", "pytorch_optimizer", tmp_path / "3.3.4"))
    ortho = {(f.attribute, f.severity) for f in found if f.class_name.endswith(".OrthoGrad")}
    assert ("_optimizer_state_dict_pre_hooks", "warning") in ortho and ("state", "warning") in ortho
    fixed = _audited(_wheel_package("pytorch-optimizer", "3.4.0", "pytorch_optimizer", tmp_path / "3.4.0"))
    assert not [f for f in fixed if f.class_name.endswith(".OrthoGrad")]


@pytest.mark.releases
def test_torch_optimizer_lookahead_of_0_3_0_is_found_where_it_is_saved(tmp_path: Path) -> None:
    # torch-optimizer 0.3.0 (its last release): Lookahead skips Optimizer.__init__ and
    # its state_dict / load_state_dict run torch's, which read the hooks it sets.
    found = _audited(_wheel_package("torch-optimizer", "0.3.0", "torch_optimizer", tmp_path / "0.3.0"))
    lookahead = {(f.attribute, f.severity) for f in found if f.class_name.endswith(".Lookahead")}
    assert ("_optimizer_state_dict_pre_hooks", "warning") in lookahead
    assert ("_optimizer_load_state_dict_pre_hooks", "warning") in lookahead


def _sdist_package(project: str, version: str, package: str, into: Path) -> Path:
    """``package`` of ``project``'s ``version`` source archive (downloaded once into the releases cache)."""
    wheels = cache_root().parent / "wheels"
    archive = wheels / f"{project}-{version}.tar.gz"
    if not archive.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "--no-build-isolation", f"{project}=={version}", "-d", str(wheels)],
                       check=True, capture_output=True)
    prefix = f"{project}-{version}/{package}/"
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if m.name.startswith(prefix) and m.isfile()]
        sdist.extractall(into, members, filter="data")
    return into / f"{project}-{version}" / package


def _patched(path: Path, old: str, new: str) -> None:
    """``path`` with the upstream fix applied: ``old`` becomes ``new``, once."""
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


@pytest.mark.releases
def test_grelu_explainn_trunk_of_1_1_0_is_found_and_its_fix_is_clean(tmp_path: Path) -> None:
    # Genentech/gReLU#188: ExplaiNNTrunk assigns a ModuleList before any Module.__init__
    # ("cannot assign module before Module.__init__() call"); fixed by a6977f5 (unreleased).
    package = _wheel_package("grelu", "1.1.0", "grelu", tmp_path)
    trunk = package / "model" / "trunks" / "explainn.py"
    found = [(f.attribute, f.severity) for f in _audited(trunk.parent) if f.class_name.endswith(".ExplaiNNTrunk")]
    assert ("_modules", "error") in found
    _patched(trunk, "        self.channels = channels\n        self.blocks = nn.ModuleList()",
             "        super().__init__()\n        self.channels = channels\n        self.blocks = nn.ModuleList()")
    assert not [f for f in _audited(trunk.parent) if f.class_name.endswith(".ExplaiNNTrunk")]


@pytest.mark.releases
def test_torchcontrib_swa_of_0_0_2_is_found_and_its_fix_of_defaults_is_clean_of_it(tmp_path: Path) -> None:
    # pytorch/contrib#20 (bdf4da5, never released): SWA wraps an optimizer without its
    # defaults, which torch's zero_grad reads. The step hooks it also lacks are still read
    # on today's torch (executed by this project's triage): those stay.
    optim = _sdist_package("torchcontrib", "0.0.2", "torchcontrib", tmp_path) / "optim"
    found = {(f.attribute, f.severity) for f in _audited(optim) if f.class_name.endswith(".SWA")}
    assert {("defaults", "error"), ("_optimizer_step_pre_hooks", "error")} <= found
    _patched(optim / "swa.py", "        self.param_groups = self.optimizer.param_groups\n",
             "        self.param_groups = self.optimizer.param_groups\n        self.defaults = self.optimizer.defaults\n")
    fixed = {(f.attribute, f.severity) for f in _audited(optim) if f.class_name.endswith(".SWA")}
    assert ("defaults", "error") not in fixed and ("_optimizer_step_pre_hooks", "error") in fixed


@pytest.mark.releases
def test_adapters_task_specific_linear_of_1_3_0_is_found_while_built(tmp_path: Path) -> None:
    # adapters 1.3.0: TaskSpecificLinear assigns an nn.Parameter and never runs
    # Module.__init__ (this project's triage, round eighteen, executed: torch refuses it).
    methods = _wheel_package("adapters", "1.3.0", "adapters", tmp_path) / "methods"
    found = [(f.attribute, f.severity) for f in _audited(methods) if f.class_name.endswith(".TaskSpecificLinear")]
    assert ("_parameters", "error") in found
