"""The package's own version, kept apart so the CLI can print it without importing anything."""

__version__ = "0.1.0"
