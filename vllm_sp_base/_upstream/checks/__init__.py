"""What the series is checked against before its message states it: vLLM's
ruff settings (``_ruff``), the Buildkite step that runs its test
(``_buildkite``), the test run on the tree with and without the change
(``_test_run``), and vLLM's pre-commit hooks where asked (``_hooks``)."""
