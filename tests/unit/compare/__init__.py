"""The unit tests of ``mlflow_fingerprint.compare``: ``test_<module>.py`` for each module."""
