"""The unit tests of ``mlflow_fingerprint.knowledge``: ``test_<module>.py`` for each module."""
