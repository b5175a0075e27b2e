"""Helpers and subprocess scripts of the reliability tests (tests/test_reliability_*.py)."""
