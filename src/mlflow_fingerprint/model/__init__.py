"""The record: the ``Fingerprint`` dataclass, its schema, and the hashes that group its fields.

Nothing here reads the machine (that is ``capture/``) or talks to MLflow (``tracking/``), so the
comparator and the renderers can load a record without paying for either.
"""
