"""What the series changes in a vLLM tree, decided from source alone: the
re-derivations the gate replaces (``_rederive``), the classes given the
defaults (``_plan``), the ``= False`` lines they make redundant
(``_redundant``), over the audit's reading of the tree (``_tree``)."""
