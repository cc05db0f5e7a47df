"""vLLM's own checks on what the series changes: its ruff settings (``_ruff``,
run by the tool itself), and what the commit messages say was run and passed
(``_validated``, re-checked by this project's tests with vLLM's pre-commit)."""
