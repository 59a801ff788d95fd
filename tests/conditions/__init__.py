"""Tests of condition rules and CEL."""
