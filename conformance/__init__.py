"""``make conformance``: the project against the reference documents beside the repository."""
