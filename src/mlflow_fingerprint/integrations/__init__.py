"""Thin layers over the run machinery for the trainers people already use.

- ``mlflow_fingerprint.integrations.lightning.FingerprintCallback`` (PyTorch Lightning);
- ``mlflow_fingerprint.integrations.transformers.FingerprintTrainerCallback`` (Hugging Face);
- ``mlflow_fingerprint.integrations.keras.FingerprintCallback`` (Keras ``model.fit``; import it
  from its submodule: the name here is Lightning's).

Each submodule imports its framework; this package imports none, so ``mlflow_fingerprint``
never pulls Lightning, transformers or Keras in unless the user asks for the callback.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "FingerprintCallback": "lightning",
    "FingerprintTrainerCallback": "transformers",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(name)
