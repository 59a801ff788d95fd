"""Randomized side-by-side runs against OCM's own programs (``make fuzz-peers``)."""
