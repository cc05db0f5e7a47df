"""The semantic model: modules and MROs, classes as Python builds and runs them, what the engine calls."""
