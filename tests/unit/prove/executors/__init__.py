"""The unit tests of ``mlflow_fingerprint.prove.executors``: ``test_<module>.py`` each."""
