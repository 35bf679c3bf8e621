"""The package's version, in a module of its own so any module can import it at module level
(``openprogram/__init__`` imports nearly everything; a module importing it back would cycle)."""

__version__ = "0.2.0"
