"""Hypothesis strategies for agent-loop runs, a reference model and property tests (the public
names are at ``openprogram_testing.strategies``)."""
