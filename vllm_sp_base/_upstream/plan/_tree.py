"""The audit's reading of a vLLM source tree, over that tree only: an older
vLLM never resolves into the installed one. Nothing is imported or executed."""

from __future__ import annotations

import ast
import os

from vllm_sp_base._audit._engine import AuditResult
from vllm_sp_base._audit.semantics._project import ClassRef, MroEntry, Project
from vllm_sp_base._audit.sources._cache import Cache
from vllm_sp_base._audit.sources._sources import Sources
from vllm_sp_base._audit.summaries._summaries import ClassInfo


class SourceTreeError(Exception):
    """The given directory is not a vLLM source tree."""


def locate(given: str) -> str:
    """The directory holding ``vllm/`` for ``given`` (that directory, or ``vllm/`` itself)."""
    if not os.path.exists(given):
        raise SourceTreeError(f"{given}: no such directory")
    if not os.path.isdir(given):
        raise SourceTreeError(f"{given}: not a directory")
    path = os.path.abspath(given)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # the series, the audit's modules and git name files in UTF-8
        shown = os.fsencode(given).decode("utf-8", "backslashreplace")  # printable on any stream
        raise SourceTreeError(f"{shown}: its path is not UTF-8; rename it or copy the tree") from None
    if os.path.isfile(os.path.join(path, "vllm", "__init__.py")):
        return path
    if os.path.basename(path) == "vllm" and os.path.isfile(os.path.join(path, "__init__.py")):
        return os.path.dirname(path)
    raise SourceTreeError(f"{given}: not a vLLM source tree (no vllm/__init__.py)")


class Analysis:
    """The audit's source reader and resolution, over the given tree only."""

    def __init__(self, root: str, files: dict[str, str]) -> None:
        self.root = root
        self.files = files  # path -> module
        self.found = AuditResult()  # collects why a file could not be read or parsed
        self.sources = Sources(Cache(None, False), self.found, set(files), whole=True)
        self.project = Project([root], self.sources.summary, text=self.sources.read)
        self._trees: dict[str, ast.Module] = {}

    def path_of(self, ref: ClassRef) -> str:
        located = self.project.module_file(ref.module)
        assert located is not None
        return located[0]

    def relpath(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def tree(self, path: str) -> ast.Module:
        """The AST of a file that summarised cleanly, parsed once."""
        if path not in self._trees:
            self._trees[path] = ast.parse(self.sources.texts[path])
        return self._trees[path]

    def info(self, entry: MroEntry) -> ClassInfo | None:
        return self.project.class_info(entry) if isinstance(entry, ClassRef) else None
