"""The ``fingerprint`` command line."""
