"""Hostile and malformed input: fuzzed works, slow expressions, oversized works (issue 9)."""
