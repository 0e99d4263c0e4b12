"""Loading the secret scanner in a fresh process leaves that process's warning filters alone."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_scanner_leaves_the_processs_warnings_alone() -> None:
    """detect-secrets turns logging.captureWarnings on at import, which silenced every warning of
    a training process (HeterogeneousJobWarning among them) once a diff was redacted."""
    code = (
        "import warnings\n"
        "from mlflow_fingerprint.redact import redact_text\n"
        "redact_text('token=ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8', set())\n"
        "warnings.warn('still shown', UserWarning)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "UserWarning: still shown" in done.stderr
