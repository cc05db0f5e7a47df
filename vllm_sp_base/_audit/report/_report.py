"""Text, JSON and SARIF 2.1.0 output; baselines."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from vllm_sp_base import __version__
from vllm_sp_base._audit._engine import AuditResult
from vllm_sp_base._audit.report._finding import Finding

if TYPE_CHECKING:
    from vllm_sp_base._audit.report._stale import Stale

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: Where the tool and its rule are documented (``[project.urls]`` in pyproject.toml).
HOMEPAGE = "https://github.com/vllm-sp-base/vllm-sp-base"
RULE_DOC = f"{HOMEPAGE}/blob/main/docs/audit.md"
SRCROOT = "%SRCROOT%"


def as_json(result: AuditResult, stale: Stale | None = None) -> str:
    """``stale``: the entries of ``--baseline`` not met (``stale_baseline``, null without one)."""
    import json  # here and below: the default text output never needs it (~1.5 ms a start)

    return json.dumps(
        {
            "tool": {"name": "vllm-sp-base", "version": __version__},
            "files": result.files,
            "parsed": result.parsed,
            "suppressed": result.suppressed,
            "only_bases": result.only_bases,  # never built alone: checked through their subclasses
            "unresolved": [
                {"file": u.path, "line": u.line, "class": u.class_name, "base": u.base,
                 "reason": u.reason, "message": u.message}
                for u in result.unresolved
            ],
            "unused_noqa": [{"file": path, "line": line} for path, line in result.unused_noqa],
            "findings": [_with_fix(f.to_json(), result, f) for f in result.findings],
            "diagnostics": [{"path": p, "message": m} for p, m in result.diagnostics],
            "stale_baseline": stale.to_json() if stale is not None else None,
        },
        indent=2,
    )


def _with_fix(data: dict[str, Any], result: AuditResult, finding: Finding) -> dict[str, Any]:
    """A finding's JSON with ``fix``: what --fix can do (``applicability`` safe,
    unsafe or none, ``message``, ``reason`` for an unsafe one)."""
    status = result.fixes.get(finding)
    data["fix"] = status.to_json() if status is not None else None
    return data


def statistics_json(result: AuditResult) -> str:
    """``--statistics --output-format json``: the counts by skipped ``__init__``."""
    import json
    from collections import defaultdict

    by_init: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        by_init[f.skipped_init].append(f)
    return json.dumps([
        {"skipped_init": init, "findings": len(found), "classes": len({f.class_name for f in found}),
         "errors": sum(f.severity == "error" for f in found),
         "warnings": sum(f.severity == "warning" for f in found),
         "notes": sum(f.severity == "note" for f in found)}
        for init, found in sorted(by_init.items(), key=lambda item: (-len(item[1]), item[0]))
    ], indent=2)


def _location(path: str, line: int, col: int = 1, message: str | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": _artifact(path),
            "region": {"startLine": max(line, 1), "startColumn": max(col, 1)},
        }
    }
    if message:
        location["message"] = {"text": message}
    return location


def _artifact(path: str) -> dict[str, str]:
    """Relative to the working directory (the checkout a code-scanning upload
    resolves against: ``%SRCROOT%``); a file outside it (an installed package)
    keeps its absolute ``file://`` URI, the only name it has."""
    from urllib.parse import quote

    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    if relative.startswith(os.pardir):
        return {"uri": "file://" + quote(os.fsencode(absolute.replace(os.sep, "/")))}
    return {"uri": quote(os.fsencode(relative.replace(os.sep, "/"))), "uriBaseId": SRCROOT}


def _directory_uri(directory: str) -> str:
    from urllib.parse import quote

    return "file://" + quote(os.fsencode(directory.replace(os.sep, "/").rstrip("/") + "/"))


def _code_flow(finding: Finding) -> dict[str, Any]:
    """The calls from the entry point (or ``__init__``) to the read, in order."""
    return {
        "threadFlows": [{
            "locations": [
                {"location": _location(frame.path, frame.line, 1, frame.method), "nestingLevel": depth}
                for depth, frame in enumerate(finding.chain)
            ]
        }]
    }


def sarif(result: AuditResult, stale: Stale | None = None) -> str:
    """``stale``: the entries of ``--baseline`` not met, as notes among the
    tool's notifications."""
    from vllm_sp_base._audit.rule._rule import SkippedInitRead  # its doc: only SARIF needs it

    rule = SkippedInitRead
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": 0,
            "level": f.severity,
            "message": {"text": f.message},
            "locations": [_location(f.path, f.line, f.col)],
            "relatedLocations": [
                {"id": 1, **_location(f.read_path, f.read_line, 1, f"read of self.{f.attribute}")},
                {"id": 2, **_location(f.set_path, f.set_line, 1,
                                      f"set only in {f.skipped_init}.__init__")},
            ],
            "partialFingerprints": {"vllmSpBase/v1": f.fingerprint()},
            **({"properties": {"fix": result.fixes[f].to_json()}} if f in result.fixes else {}),
            **({"codeFlows": [_code_flow(f)]} if f.chain else {}),
        }
        for f in result.findings
    ]
    notifications = [
        {"level": "warning", "message": {"text": reason}, "locations": [_location(path, 1)]}
        for path, reason in result.diagnostics
    ] + [
        {"level": "warning", "message": {"text": u.message}, "locations": [_location(u.path, u.line)]}
        for u in result.unresolved
    ] + [
        {"level": "warning", "message": {"text": "unused noqa: SPB001 suppresses nothing here"},
         "locations": [_location(path, line)]}
        for path, line in result.unused_noqa
    ] + [
        {"level": "note", "message": {"text": line}, "descriptor": {"id": "stale-baseline"}}
        for line in (stale.lines() if stale else [])
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "vllm-sp-base",
                        "version": __version__,
                        "informationUri": HOMEPAGE,
                        "rules": [
                            {
                                "id": rule.CODE,
                                "name": "SkippedInitRead",
                                "shortDescription": {
                                    "text": "inherited read of an attribute only a skipped __init__ sets"
                                },
                                "fullDescription": {"text": " ".join((rule.__doc__ or "").split())},
                                "helpUri": RULE_DOC,
                                "help": {"text": f"How to read and fix a finding: {RULE_DOC}"},
                                "defaultConfiguration": {"level": "error"},
                            }
                        ],
                    }
                },
                "originalUriBaseIds": {
                    SRCROOT: {"uri": _directory_uri(os.getcwd())},
                },
                "invocations": [
                    {"executionSuccessful": True, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
    import json

    return json.dumps(doc, indent=2)


#: A baseline of a million findings is ~60 MB; anything larger is not one.
_BASELINE_BYTES = 64 << 20


def read_baseline(path: str) -> set[str]:
    """Raises OSError/ValueError with a message fit for one line."""
    import json
    import stat

    # Opened without blocking (a FIFO with no writer would wait forever), then
    # read only if it is a regular file of a size a baseline can have.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file (a FIFO, a device or a folder)")
        if info.st_size > _BASELINE_BYTES:
            raise ValueError(f"{info.st_size} bytes: larger than a baseline can be ({_BASELINE_BYTES})")
        text = handle.read(_BASELINE_BYTES + 1).decode("utf-8")
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a baseline") from None
    if not isinstance(data, dict) or not isinstance(data.get("fingerprints"), list):
        raise ValueError("not a vllm-sp-base baseline (no 'fingerprints' list)")  # noqa: TRY004 (bad file content, not a bad argument)
    if not all(isinstance(x, str) for x in data["fingerprints"]):
        raise ValueError("not a vllm-sp-base baseline ('fingerprints' holds a non-string)")
    return set(data["fingerprints"])


def baselined(result: AuditResult) -> set[str]:
    """What a baseline records of a run: its findings and its unresolved bases
    (each a failure of the run until fixed, so each a thing to accept once)."""
    return {f.fingerprint() for f in result.findings} | {u.fingerprint() for u in result.unresolved}


def write_baseline(path: str, result: AuditResult) -> None:
    import json
    import stat
    import tempfile

    data = {"tool": "vllm-sp-base", "version": __version__, "fingerprints": sorted(baselined(result))}
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):  # a device or a FIFO: a rename would replace the node itself
        raise OSError(f"not a regular file ({'a FIFO' if stat.S_ISFIFO(mode) else 'a device or a folder'})")
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(prefix=".vllm-sp-base-baseline-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)  # a full disk leaves nothing half-written behind
        raise
