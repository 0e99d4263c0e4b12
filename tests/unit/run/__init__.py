"""The unit tests of ``mlflow_fingerprint.run``: ``test_<module>.py`` for each module."""
