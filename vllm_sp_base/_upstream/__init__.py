"""``vllm-sp-base upstream``: rewrite a vLLM source tree to adopt the contract."""
