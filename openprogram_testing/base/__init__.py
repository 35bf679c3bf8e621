"""The lowest layer: what every layer shares. Project paths and file names, safe YAML, failures
as data, the side channel of a recorded run, the install hint of the testing extra and the
deprecated spellings of 0.1. Imports nothing else of the harness."""
