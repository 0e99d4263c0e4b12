"""Everything that speaks to MLflow: the client and its error translation, the run's uploader
and its crash-safe spool, ``fingerprint sync``, writer liveness, the tags and artifacts a run
carries, and the comparator's reads of stored runs.

The training thread never calls into this package directly except to hand values to the
uploader; every network call happens on the uploader's thread or in the CLI.
"""
