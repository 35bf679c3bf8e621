"""YAML scenarios, a front end of their own: load, run, judge and collect scenario files (the
public names are at ``openprogram_testing.scenarios``)."""
