"""The unit tests of ``mlflow_fingerprint.compare.rules``: ``test_<module>.py`` for each module."""
