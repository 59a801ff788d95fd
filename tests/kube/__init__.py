"""Tests of workagent.kube against kubesim."""
