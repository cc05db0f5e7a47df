"""Text, JSON and SARIF 2.1.0 output; baselines."""

from __future__ import annotations

import os
from typing import Any

from vllm_sp_base import __version__
from vllm_sp_base._audit._engine import AuditResult
from vllm_sp_base._audit._finding import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def text(result: AuditResult) -> str:
    lines = [
        f"{_display(f.path)}:{f.line}:{f.col}: {f.code} [{f.severity}] {f.message}"
        for f in result.findings
    ]
    return "\n".join(lines)


def diagnostics_text(result: AuditResult) -> str:
    return "\n".join(f"{_display(path)}: cannot audit: {reason}" for path, reason in result.diagnostics)


def as_json(result: AuditResult) -> str:
    import json  # here and below: the default text output never needs it (~1.5 ms a start)

    return json.dumps(
        {
            "tool": {"name": "vllm-sp-base", "version": __version__},
            "files": result.files,
            "parsed": result.parsed,
            "suppressed": result.suppressed,
            "only_bases": result.only_bases,  # never built alone: checked through their subclasses
            "findings": [f.to_json() for f in result.findings],
            "diagnostics": [{"path": p, "message": m} for p, m in result.diagnostics],
        },
        indent=2,
    )


def _location(path: str, line: int, col: int = 1, message: str | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": {"startLine": max(line, 1), "startColumn": max(col, 1)},
        }
    }
    if message:
        location["message"] = {"text": message}
    return location


def _uri(path: str) -> str:
    return "file://" + os.path.abspath(path) if os.path.isabs(path) else path.replace(os.sep, "/")


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


def sarif(result: AuditResult) -> str:
    from vllm_sp_base._audit._rule import SkippedInitRead  # its doc: only SARIF needs it

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
                {"id": 2, **_location(f.skipped_path, f.set_line, 1,
                                      f"set only in {f.skipped_init}.__init__")},
            ],
            "partialFingerprints": {"vllmSpBase/v1": f.fingerprint()},
            **({"codeFlows": [_code_flow(f)]} if f.chain else {}),
        }
        for f in result.findings
    ]
    notifications = [
        {"level": "warning", "message": {"text": reason}, "locations": [_location(path, 1)]}
        for path, reason in result.diagnostics
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
                        "informationUri": "https://github.com/vllm-project/vllm",
                        "rules": [
                            {
                                "id": rule.CODE,
                                "name": "SkippedInitRead",
                                "shortDescription": {
                                    "text": "inherited read of an attribute only a skipped __init__ sets"
                                },
                                "fullDescription": {"text": " ".join((rule.__doc__ or "").split())},
                                "defaultConfiguration": {"level": "error"},
                            }
                        ],
                    }
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


def read_baseline(path: str) -> set[str]:
    """Raises OSError/ValueError with a message fit for one line."""
    import json

    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or not isinstance(data.get("fingerprints"), list):
        raise ValueError("not a vllm-sp-base baseline (no 'fingerprints' list)")  # noqa: TRY004 (bad file content, not a bad argument)
    if not all(isinstance(x, str) for x in data["fingerprints"]):
        raise ValueError("not a vllm-sp-base baseline ('fingerprints' holds a non-string)")
    return set(data["fingerprints"])


def write_baseline(path: str, findings: list[Finding]) -> None:
    import json

    data = {"tool": "vllm-sp-base", "version": __version__,
            "fingerprints": sorted({f.fingerprint() for f in findings})}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)
