"""The new text of each file the series touches: the libcst rewrite of vLLM's
files (``_codemod``, ``_imports``), test stand-ins (``_stand_ins``), and the
files it adds (``_contract_module``, ``_vllm_tests``, ``_ci_wiring``)."""
