"""The pytest plugin (its options, hooks and fixtures) and the objects behind its fixtures."""
