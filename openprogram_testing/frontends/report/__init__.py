"""See what a suite did: the HTML report and loop-behaviour coverage (the public names are at
``openprogram_testing.report``)."""
