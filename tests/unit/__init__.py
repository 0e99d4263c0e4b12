"""The unit tier, laid out as ``src/mlflow_fingerprint`` is: a package, so that two folders may
hold test modules of the same name (``run/test_options.py``, ``capture/test_options.py``)."""
