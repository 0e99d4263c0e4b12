"""The unit tests of ``mlflow_fingerprint.prove``: ``test_<module>.py`` for each module."""
