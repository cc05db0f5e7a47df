"""``vllm-sp-base audit``: skipped-``__init__`` inherited reads, found from source."""
