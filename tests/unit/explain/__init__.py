"""The unit tests of ``mlflow_fingerprint.explain``: ``test_<module>.py`` for each module."""
