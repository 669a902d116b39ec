"""Helpers of the cost tests: the usage limit tests' own (posting as a client, a fresh conversation)."""

from tests.limits.conftest import new_conversation, post  # noqa: F401

# Rates of the test site's model, per million tokens: easy to add up by hand.
PRICED = {"test-model": {"input": "1.00", "cached_input": "0.10", "output": "4.00"}}
