"""Credentials in a tracking URI, handed to MLflow the way it reads them from the environment.

MLflow prints the URI it was given in its own lines ("View run ... at: http://user:pass@host/...",
when a run is ended through its client) and in its error messages. So the package never gives
MLflow a URI with ``user:password@`` in it: the URI loses its user info, and the user name and
password go to ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``, which MLflow's
client reads on every request (tracking and proxied artifacts alike). Variables the user set are
left alone: MLflow already preferred them to the URI's (an explicit ``auth`` wins over the URL's
in requests), so a request goes out with the same credentials as before.

This is the one place the package writes to the process environment, once per URI, on the
caller's thread (a run's start, a command's start).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from urllib.parse import unquote, urlsplit, urlunsplit

from ..errors import ResolveError

USERNAME = "MLFLOW_TRACKING_USERNAME"
PASSWORD = "MLFLOW_TRACKING_PASSWORD"


def split_credentials(uri: str) -> tuple[str, str | None, str | None]:
    """(the URI without user info, user name, password), the last two decoded; an http(s) URI
    only (a database URI's password is the database's, read by its driver). An http(s) URI whose
    password holds a reserved character written raw is refused: no client reads it as meant, and
    their messages would show a part of it (``raw_userinfo``)."""
    refuse_raw_password(uri)
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri, None, None
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return uri, None, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, unquote(user) or None, unquote(password) or None


def refuse_raw_password(uri: str) -> None:
    """A ResolveError for an http(s) URI whose password holds a reserved character written raw:
    no client reads it as meant (its host would be the user name), and their messages showed
    part of it. Every reader of a tracking URI calls it before any client sees the URI."""
    if "@" not in uri or not uri.startswith(("http://", "https://")):
        return
    from ..redact import raw_userinfo, strip_url_credentials  # its detectors: only where needed

    if raw_userinfo(uri, server=True) is not None:
        raise ResolveError(
            f"the tracking URI {strip_url_credentials(uri)} holds a password with a character "
            "a URL reserves ('/', '?' or '#') written as it is: percent-encode it (%2F, %3F, "
            "%23), or give it in MLFLOW_TRACKING_PASSWORD"
        )


def for_mlflow(uri: str, environ: MutableMapping[str, str] | None = None) -> str:
    """``uri`` as MLflow may be given it: its user name and password moved to the environment
    (where not already set there), the URI returned without them."""
    clean, user, password = split_credentials(uri)
    env = os.environ if environ is None else environ
    if user is not None and not env.get(USERNAME):
        env[USERNAME] = user
    if password is not None and not env.get(PASSWORD):
        env[PASSWORD] = password
    return clean
