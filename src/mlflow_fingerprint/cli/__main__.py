"""``python -m mlflow_fingerprint.cli``: the same as the ``fingerprint`` script."""

from .main import entry

entry()
