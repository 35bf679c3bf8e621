"""The ``openprogram-testing`` command: the entry point, its commands, shards and the
emulator served from a shell."""
