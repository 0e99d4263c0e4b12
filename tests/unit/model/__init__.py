"""The unit tests of ``mlflow_fingerprint.model``: ``test_<module>.py`` for each module."""
