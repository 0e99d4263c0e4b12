"""The unit tests of ``mlflow_fingerprint.cli``: ``test_<module>.py`` for each module."""
