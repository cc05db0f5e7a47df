"""SPB001 and the checking of candidate classes."""
