"""OCM's own Go programs side by side with ours on the same input (real leg only)."""
