"""The unit tests of ``mlflow_fingerprint.present``: ``test_<module>.py`` for each module."""
