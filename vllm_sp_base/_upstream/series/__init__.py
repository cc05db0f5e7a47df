"""The rewrite put together (``_build``), cut into patches with their commit
messages (``_patches``), and written out all or nothing (``_output``, with
``vllm_sp_base._atomic``)."""
