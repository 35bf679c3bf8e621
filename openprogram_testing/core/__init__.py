"""Core: what a run was and what steered it. Loop traces and trace trees, rounds and
renderings, the capture of every runtime in a block, steering schedules, conditions, the
simulated user and argument matchers. Imports the transport and the base, nothing above."""
