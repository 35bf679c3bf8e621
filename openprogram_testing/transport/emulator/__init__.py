"""The provider emulator: ``plan`` turns a scripted turn (or a recorded response) and its faults
into what to send, ``server`` is the HTTP server and the script, ``retries`` asserts a client's
retries (the public names are at ``openprogram_testing.emulator``)."""
