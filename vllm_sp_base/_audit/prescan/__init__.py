"""The source-text pass that decides which classes can have a finding."""
