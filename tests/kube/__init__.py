"""Tests of ocmkit.kube against kubesim."""
