"""Judges: verdicts over what ``core`` recorded. Assertions, the loop invariants, trajectories,
usage budgets and the snapshot extension; each failure is a typed failure carrying its facts."""
