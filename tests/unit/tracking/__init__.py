"""The unit tests of ``mlflow_fingerprint.tracking``: ``test_<module>.py`` for each module."""
