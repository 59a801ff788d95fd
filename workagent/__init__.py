"""workagent package."""
