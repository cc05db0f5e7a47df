"""Finding the files to audit and how each is known (bytes, stat, content and code keys)."""
