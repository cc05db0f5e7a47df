"""What the series changes in a vLLM tree, decided from source alone: the
classes given class-level defaults (``_plan``), the ``= False`` lines they make
redundant (``_redundant``), and the hand-written sequence-parallel gates the
message accounts for (``_gates``), over the audit's reading of the tree (``_tree``)."""
