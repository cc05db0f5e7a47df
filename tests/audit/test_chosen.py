"""A class a factory chooses by one value of a setting (``semantics/_chosen``):
the enum's predicates on that value are decided, across modules as sglang
spells it; any other way the class may be built, or a second setting the
enum is read from, decides nothing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from vllm_sp_base._audit._engine import audit
from vllm_sp_base._audit.semantics._chosen import _Enum
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.summaries._conditions import EnclosingTests

ALGORITHM = textwrap.dedent("""
    from enum import Enum, auto

    class Algorithm(Enum):
        EAGLE = auto()
        EAGLE3 = auto()
        STANDALONE = auto()
        NGRAM = auto()

        @classmethod
        def from_string(cls, name):
            return cls[name.upper()]

        def is_eagle(self):
            \"\"\"EAGLE-3 is a kind of EAGLE.\"\"\"
            return self == Algorithm.EAGLE or self == Algorithm.EAGLE3

        def is_eagle3(self):
            return self == Algorithm.EAGLE3

        def is_standalone(self):
            return self is Algorithm.STANDALONE

        def is_draft_model(self):
            return self.is_eagle() or self.is_standalone()

        def not_ngram(self):
            return self not in (Algorithm.NGRAM,)

        def create_worker(self, server_args):
            assert self != Algorithm.NGRAM
            if self.is_eagle() and server_args.multi_layer:
                return MultiLayerWorker
            elif self.is_eagle():
                if server_args.overlap:
                    return EagleWorkerV2
                return EagleWorker
            elif self.is_standalone():
                from pkg.standalone import StandaloneWorker

                return StandaloneWorker
            raise ValueError(self)
""")

EAGLE = textwrap.dedent("""
    from pkg.spec_info import Algorithm

    class BaseTpWorker:
        def forward_batch_generation(self, batch):
            raise NotImplementedError

    class EagleWorker(BaseTpWorker):
        def __init__(self, server_args):
            self.algorithm = Algorithm.from_string(server_args.speculative_algorithm)
            self.use_aux_hidden_state = self.algorithm.is_eagle3()

        def forward_batch_generation(self, batch):
            if not self.algorithm.is_draft_model():
                return None
            if self.algorithm.is_eagle3() and self.use_aux_hidden_state:
                return batch
            return None
""")

STANDALONE = textwrap.dedent("""
    from pkg.eagle import EagleWorker
    from pkg.spec_info import Algorithm

    class StandaloneWorker(EagleWorker):
        def __init__(self, server_args):
            self.algorithm = Algorithm.from_string(server_args.speculative_algorithm)
""")

SCHEDULER = textwrap.dedent("""
    from pkg.spec_info import Algorithm

    class Scheduler:
        def __init__(self, server_args):
            self.spec_algorithm = Algorithm.from_string(server_args.speculative_algorithm)
            self.draft_worker = self.spec_algorithm.create_worker(server_args)(server_args)
""")


def _project(tmp_path: Path, **extra: str) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    files = {"__init__": "", "spec_info": ALGORITHM, "eagle": EAGLE, "standalone": STANDALONE,
             "scheduler": SCHEDULER, **extra}
    for name, text in files.items():
        (package / f"{name}.py").write_text(text)
    return package


def _warned(package: Path) -> set[tuple[str, str]]:
    result = audit([str(package)], cache=Cache(None, False))
    return {(f.class_name.rsplit(".", 1)[-1], f.attribute) for f in result.findings}


def test_a_worker_chosen_for_another_value_never_passes_the_predicate(tmp_path: Path) -> None:
    assert _warned(_project(tmp_path)) == set()


@pytest.mark.parametrize("extra", [
    # built outside the factory: for any algorithm
    {"tests_double": "from pkg.standalone import StandaloneWorker\nWORKER = StandaloneWorker(None)\n"},
    # named in a string: a registry may build it
    {"registry": "WORKERS = {'standalone': 'pkg.standalone:StandaloneWorker'}\n"},
    # the enum read from a second setting: two values in one server
    {"draft": "from pkg.spec_info import Algorithm\n"
              "def draft(args):\n    return Algorithm.from_string(args.draft_algorithm)\n"},
    # the enum looked up from data: any value
    {"lookup": "from pkg.spec_info import Algorithm\n"
               "def pick(name):\n    return Algorithm[name]\n"},
    # built under another name
    {"renamed": "from pkg.standalone import StandaloneWorker as Worker\nWORKER = Worker(None)\n"},
    # converted under another name
    {"renamed_enum": "from pkg.spec_info import Algorithm as Algo\n"
                     "def draft(args):\n    return Algo.from_string(args.draft_algorithm)\n"},
], ids=["built-elsewhere", "named-in-a-string", "second-setting", "looked-up", "built-renamed",
        "converted-renamed"])
def test_anything_else_that_may_choose_the_value_decides_nothing(tmp_path: Path, extra: dict[str, str]) -> None:
    assert _warned(_project(tmp_path, **extra)) == {("StandaloneWorker", "use_aux_hidden_state")}


def test_a_worker_that_sets_the_value_again_later_decides_nothing(tmp_path: Path) -> None:
    later = STANDALONE + textwrap.indent(textwrap.dedent("""
        def switch(self, server_args):
            self.algorithm = Algorithm.from_string(server_args.speculative_algorithm)
    """), "    ")
    assert _warned(_project(tmp_path, standalone=later)) == {("StandaloneWorker", "use_aux_hidden_state")}


def _enum(source: str = ALGORITHM) -> _Enum:
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    found = _Enum.read(node, source.encode())
    assert found is not None
    return found


def test_predicates_are_read_from_their_comparisons() -> None:
    enum = _enum()
    assert enum.predicate("is_eagle") == {"EAGLE", "EAGLE3"}
    assert enum.predicate("is_standalone") == {"STANDALONE"}
    assert enum.predicate("is_draft_model") == {"EAGLE", "EAGLE3", "STANDALONE"}
    assert enum.predicate("not_ngram") == {"EAGLE", "EAGLE3", "STANDALONE"}
    assert enum.predicate("from_string") is None  # a class method: no predicate of self
    assert enum.predicate("create_worker") is None


def test_the_factory_chooses_each_class_for_the_values_its_tests_leave() -> None:
    enum = _enum()
    chosen = {name: enum.chosen(name) for name in ("MultiLayerWorker", "EagleWorker", "StandaloneWorker")}
    # ``is_eagle() and server_args.multi_layer``: its else leaves EAGLE in.
    assert {name: c[0] if c else None for name, c in chosen.items()} == {
        "MultiLayerWorker": {"EAGLE", "EAGLE3"},
        "EagleWorker": {"EAGLE", "EAGLE3"},
        "StandaloneWorker": {"STANDALONE"},
    }
    assert enum.chosen("NgramWorker") is None


@pytest.mark.parametrize("source", [
    "class Algorithm:\n    EAGLE = 1\n    def is_eagle(self):\n        return self == Algorithm.EAGLE\n",
    "from enum import Enum\nclass Algorithm(Enum):\n    EAGLE = 1\n    DRAFT = 1\n",
], ids=["no-enum", "aliases"])
def test_only_a_plain_enum_is_read(source: str) -> None:
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    assert _Enum.read(node, source.encode()) is None


def _requirements(test: str) -> list[str]:
    return EnclosingTests("self", {}).requirements(ast.parse(test, mode="eval").body, True)


def test_a_predicate_on_what_the_instance_holds_is_a_requirement() -> None:
    assert _requirements("self.algorithm.is_eagle3()") == ["algorithm.is_eagle3()"]
    assert _requirements("not self.algorithm.is_eagle3()") == ["!algorithm.is_eagle3()"]
    assert _requirements("self.algorithm.is_eagle3(x)") == []  # arguments: no predicate of the value alone
    assert _requirements("other.is_eagle3()") == []


def test_a_factory_of_thousands_of_branches_is_read_without_a_crash(tmp_path: Path) -> None:
    branches = "".join(f"        elif self.is_eagle3() and server_args.x{i}:\n            return EagleWorker\n"
                       for i in range(2000))
    factory = ALGORITHM.replace("        elif self.is_eagle():\n", branches + "        elif self.is_eagle():\n")
    assert factory.count("elif") > 2000
    assert _warned(_project(tmp_path, spec_info=factory)) == set()
