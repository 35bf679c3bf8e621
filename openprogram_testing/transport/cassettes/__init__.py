"""Record and replay real provider HTTP traffic, built on vcrpy (the public names are at
``openprogram_testing.cassettes``)."""
