"""The new text of each file the series touches: the libcst rewrite of vLLM's
files (``_codemod``) and the test it adds to vLLM's own test file (``_vllm_tests``)."""
