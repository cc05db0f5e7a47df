"""vLLM's own checks run on what the series changes: its ruff settings
(``_ruff``, run by the tool itself) and its pre-commit hooks (``_hooks``, run by
the tests and the releases bench)."""
