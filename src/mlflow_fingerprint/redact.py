"""Keep secrets out of everything we log: credentials in URLs and secret-looking values.

Applied to remote URLs by the git probe and, as a last line of defence, to every tag, param and
artifact the run writer sends (see ``run``), so a token that slipped into any field is masked.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://user:pass@host  or  scheme://token@host
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/@\s]+)@")

# Well-known token shapes (GitHub, Hugging Face, AWS access keys, Slack, generic bearer/JWT).
TOKEN_PATTERNS = (
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bxox[abpr]-[A-Za-z0-9\-]{10,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\b"),
)

SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|_KEY$|^KEY$|AUTH)",
    re.IGNORECASE,
)


def strip_url_credentials(url: str) -> str:
    """``https://user:token@host/r.git`` -> ``https://host/r.git``; scp-style ``git@host:r`` kept
    (the user there is a fixed account name, not a credential)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _URL_USERINFO.sub(lambda m: m.group("scheme"), url)
    if parts.scheme and ("@" in parts.netloc):
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def secret_env_values(environ: dict[str, str] | None = None, min_length: int = 6) -> set[str]:
    """Values of environment variables whose names say they are secret."""
    env = os.environ if environ is None else environ
    return {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= min_length}


def redact_text(text: str, secrets: set[str] | None = None) -> str:
    """Mask URL credentials, token-shaped strings and the given secret values in free text."""
    text = _URL_USERINFO.sub(lambda m: m.group("scheme"), text)
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(MASK, text)
    for secret in sorted(secrets or (), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
