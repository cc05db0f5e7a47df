"""Findings and what a person or a tool reads of them."""
