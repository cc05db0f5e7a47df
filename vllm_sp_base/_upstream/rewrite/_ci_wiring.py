"""Wire the series' model tests into vLLM's Buildkite CI.

vLLM's pre-commit (``check-test-tethering``) refuses a test file that no
Buildkite job runs. The CPU job that runs ``models/deepseek_v32/test_sequence_parallel.py``
is where the tests of the DeepseekV32 classes belong: each new test goes next
to it, in the job's ``source_file_dependencies`` and in its ``pytest`` command.
A text edit, line by line, so the rest of the YAML stays byte for byte.
"""

from __future__ import annotations

from typing import Final

CI_PATH: Final = ".buildkite/test_areas/models_basic.yaml"
#: The tethered test the new ones join (relative to ``tests/``).
ANCHOR_TEST: Final = "models/deepseek_v32/test_sequence_parallel.py"


def wire(yaml_text: str, test_path: str) -> str | None:
    """``yaml_text`` with ``test_path`` (``tests/...``) run by the anchor's job;
    None where the anchor's job is not found (wire it by hand then)."""
    relative = test_path.removeprefix("tests/")
    if f"tests/{relative}" in yaml_text and f" {relative}" in yaml_text:
        return yaml_text
    lines = yaml_text.split("\n")  # not splitlines: a form feed in a line stays in it
    dependency = next((i for i, line in enumerate(lines)
                       if line.strip() == f"- tests/{ANCHOR_TEST}"), None)
    command = next((i for i, line in enumerate(lines)
                    if "pytest" in line and f" {ANCHOR_TEST}" in line), None)
    if dependency is None or command is None:
        return None
    lines[command] = lines[command].replace(f" {ANCHOR_TEST}", f" {ANCHOR_TEST} {relative}", 1)
    indent = lines[dependency][: len(lines[dependency]) - len(lines[dependency].lstrip())]
    ending = "\r" if lines[dependency].endswith("\r") else ""  # a CRLF file stays CRLF
    lines.insert(dependency + 1, f"{indent}- tests/{relative}{ending}")
    return "\n".join(lines)
