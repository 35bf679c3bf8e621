"""Front ends: how a user reaches the judges. The pytest plugin and fixtures, the command line,
YAML scenarios, hypothesis strategies, the HTML report and coverage, drift between recordings.
Nothing below imports a front end."""
