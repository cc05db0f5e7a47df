"""Reading each file once: pre-scans and summaries, through the cache, on workers."""
