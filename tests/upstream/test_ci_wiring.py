"""The series' model tests join the Buildkite job of their neighbours (vLLM's
``check-test-tethering`` refuses a test no job runs); the rest of the YAML
stays byte for byte."""

from __future__ import annotations

import textwrap

from vllm_sp_base._upstream.rewrite._ci_wiring import wire

JOB = textwrap.dedent("""\
    - label: ":computer: (CPU) Basic Models Other"
      source_file_dependencies:
      - vllm/
      - tests/models/test_utils.py
      - tests/models/deepseek_v32/test_sequence_parallel.py
      - tests/models/test_dspark_mla.py
      commands:
        - pytest -v -s models/test_utils.py models/deepseek_v32/test_sequence_parallel.py models/test_dspark_mla.py

    - label: other
      commands:
        - pytest -v -s models/deepseek_v32/test_sequence_parallel_x.py
    """)
NEW = "tests/models/deepseek_v32/test_sequence_parallel_defaults.py"


def test_the_test_joins_the_anchor_s_job_and_nothing_else_moves() -> None:
    wired = wire(JOB, NEW)
    assert wired is not None
    added = [line for line in wired.splitlines() if line not in JOB.splitlines()]
    assert added == [
        "  - tests/models/deepseek_v32/test_sequence_parallel_defaults.py",
        "    - pytest -v -s models/test_utils.py models/deepseek_v32/test_sequence_parallel.py "
        "models/deepseek_v32/test_sequence_parallel_defaults.py models/test_dspark_mla.py",
    ]
    assert len(wired.splitlines()) == len(JOB.splitlines()) + 1
    assert wire(wired, NEW) == wired  # a second run changes nothing


def test_two_tests_in_turn_and_no_anchor_is_said() -> None:
    first = wire(JOB, NEW)
    assert first is not None
    both = wire(first, "tests/models/deepseek_v32/test_sequence_parallel_check.py")
    assert both is not None and both.count("test_sequence_parallel_check.py") == 2
    assert both.count("test_sequence_parallel_defaults.py") == 2
    assert wire("- label: x\n  commands:\n    - pytest models/\n", NEW) is None


def test_a_crlf_file_stays_crlf_and_a_last_line_without_newline_stays_its_own() -> None:
    crlf = JOB.replace("\n", "\r\n")
    wired = wire(crlf, NEW)
    assert wired is not None and wired.replace("\r\n", "\n") == wire(JOB, NEW)
    assert "\n" not in wired.replace("\r\n", "")  # every line, the added one too, ends in CRLF
    # The anchor's dependency on the last line, no newline after it: the new one is a line of its own.
    job = ("- label: x\n  commands:\n    - pytest -v -s models/deepseek_v32/test_sequence_parallel.py\n"
           "  source_file_dependencies:\n  - tests/models/deepseek_v32/test_sequence_parallel.py")
    assert wire(job, NEW) == (
        job.replace("parallel.py\n", "parallel.py models/deepseek_v32/test_sequence_parallel_defaults.py\n")
        + "\n  - " + NEW)
