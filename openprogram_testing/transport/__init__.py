"""Transport: what an agent under test talks to instead of a paid provider or a real server.

The scripted and schema-driven providers, the wire formats, the loopback provider emulator,
cassettes of real provider traffic, the one fault vocabulary and fake MCP servers. What the
transport has to say about a run goes through ``base.recording``; it never imports ``core``."""
