"""Throwaway team-server parts for tests and benchmarks: PostgreSQL, an S3 store, mlflow server.

Each part is a real process started from what is installed on the machine (no containers, no
mocks of MLflow itself), bound to 127.0.0.1 on a free port and removed at the end.
"""
