"""The unit tests of ``mlflow_fingerprint.capture``: ``test_<module>.py`` for each module."""
