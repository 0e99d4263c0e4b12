"""Keep secrets out of everything we log: the one redactor of the package.

Applied to remote URLs by the git probe and, as a last line of defence, to every tag, param and
artifact the run writer sends: the fingerprint, the uncommitted git diff, the traceback of a
failed training. What it masks:

- credentials in URLs (``scheme://user:password@host``, any scheme: DSNs too);
- the token shapes of detect-secrets' regex detectors (AWS, GitHub, GitLab, Slack, Stripe,
  SendGrid, Twilio, npm, JWTs, private keys, ...), plus the shapes it lacks (OpenAI project and
  Anthropic keys, Google API keys, Hugging Face, Discord webhooks, Bitbucket, Azure);
- values given to secret-sounding names (``DB_PASSWORD=...``, ``"password": "..."``,
  ``?api_key=...``), detect-secrets' keyword detector included;
- HTTP basic credentials (``Authorization: Basic <base64 of user:password>``), which
  detect-secrets only finds inside URLs;
- in free text (argv, exception messages, the diff, names and values a user hands over), bare
  random-looking strings of 24 characters or more (``entropy``): a 40-character AWS secret
  access key with nothing before it has no shape to match. Hexadecimal strings (git commits,
  run ids, digests, UUIDs), digests written after their algorithm (``sha256=...``) and strings
  made of words (paths, model names, identifiers) stay readable;
- the values of environment variables whose names say they are secret, and every secret the
  scanner finds inside any other variable's value (a webhook URL in ``NOTIFY_URL``), so a value
  that reappears in free text is masked wherever it appears.

detect-secrets' entropy detectors are not used: every digest in a fingerprint looks like a key
to them, and they only look inside quotes. A value the user says is no secret
(``MLFLOW_FINGERPRINT_NOT_SECRET``) is left as it is wherever it appears. Text is scanned in
chunks of whole lines, so a long diff never holds the GIL for more than a chunk's worth of
regular-expression work, and a caller may give a deadline past which the scan stops
(``RedactionTimeout``) rather than run on.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import math
import re
import secrets as _random
import string
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache, partial
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from .environment import environ_copy

MASK = "***"
CHUNK_CHARS = 1 << 16

# Shapes detect-secrets has no detector for (or only an older form of), masked whole. Each starts
# with a literal (no ``\b``), which lets the regular-expression engine skip to it: a pass over a
# megabyte costs under a millisecond.
TOKEN_PATTERNS = (
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"hf_[A-Za-z0-9]{20,}"),
    re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    re.compile(r"sk-(?:proj-|ant-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    re.compile(r"npm_[A-Za-z0-9]{30,}"),
    re.compile(r"ATBB[A-Za-z0-9_=.\-]{20,}"),
    re.compile(r"glpat-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    re.compile(r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]+"),
    re.compile(r"https://hooks\.slack\.com/[\w/\-]+"),
    re.compile(r"https://[\w.\-]+\.webhook\.office\.com/[\w/@\-]+"),
)
# Shapes without a leading literal cost up to 100 ms a megabyte each: each runs only on the lines
# holding its gate, a literal every match contains.
URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/@\s]+)@")
# How far into a URL ``raw_userinfo`` looks for the ``@`` ending a user info: a bound on the work
# a long word of a text costs.
USERINFO_MAX_CHARS = 1024
# A URL as a word of a text: its user info is masked (``_mask_url_word``).
_URL_WORD = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*://\S+")
_AUTHORITY_END = re.compile(r"[/?#]")
# Query parameters of signed URLs, every one masked: S3's and GCS's (``X-Amz-Signature``,
# ``X-Amz-Credential``, ``X-Goog-Signature``); Azure's SAS signature is ``sig``.
_SIGNED_URL_PREFIXES = ("x-amz-", "x-goog-")
_CLOSING = "\"'`)]}>,;."
_SIGNATURE_NAME = re.compile(r"(?:^|[_\-.])(?:sig|signature)$")
# What may follow the ``@`` that ends a user info: a host name or address, and a port.
_HOST = re.compile(r"(?:[\w.\-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?")
_AZURE_CLIENT_SECRET = re.compile(r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{30,}")
_BEARER = re.compile(r"(?i)bearer[ \t]+([A-Za-z0-9._~+/\-]{16,}=*)")
# ``Basic`` and the base64 of ``user:password``: masked only where it decodes to that, so "basic
# configuration" stays (see ``_mask_basic``).
_BASIC = re.compile(r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
_GATES = {"ArtifactoryDetector": ("AKC", "AP"), "MailchimpDetector": ("-us",)}
# A run of base64/url-safe characters long enough to be a key; ``looks_random`` decides.
RANDOM_MIN_CHARS = 24
_RANDOM_CANDIDATE = re.compile(rf"[A-Za-z0-9+/_\-]{{{RANDOM_MIN_CHARS},}}={{0,2}}")
# The words that put a line through the keyword rules, found in the chunk lower-cased in ASCII
# (``str.lower`` may change its length, and the lines' offsets with it).
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
KEYWORDS = ("pass", "pw", "secret", "token", "key", "credential", "auth", "sig", "contrase")

# A value given to a secret-sounding name: ``DB_PASSWORD=x``, ``"password": "x"``, ``?token=x``.
_NAME = (
    r"[\w.\-]*(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|"
    r"access[_\-]?key|private[_\-]?key|signing[_\-]?key|credentials?|auth|[_\-]key|sig)"
)
_ASSIGNED = re.compile(
    rf"(?i)(?P<name>\b{_NAME}[\"']?[ \t]*(?::=|=>|[:=])[ \t]*)"
    r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]+)(?P=q)|(?P<bare>[^\s\"',;&#)}\]]{3,}))"
)
# ``pw`` and ``pass`` as a whole name or its last part (``pw=``, ``db_pass:``; never ``bypass``
# or ``num_passes``), which code uses for other things too (a pointwise convolution ``pw``, a
# ``forward_pass``): a quoted value, or a bare one that reads as a password (letters and digits,
# no call, attribute or index after it). A diff masked where nothing was secret could no longer
# be applied by a rerun.
_BARE_PASSWORD = r"(?=[^\s\"',;&#)}\](.]*\d)(?=[^\s\"',;&#)}\](.]*[A-Za-z])[^\s\"',;&#)}\](.]{6,}"
_ASSIGNED_SHORT = re.compile(
    r"(?i)(?P<name>\b(?:[\w.\-]*[_.\-])?(?:pass|pw)[\"']?[ \t]*(?::=|=>|[:=])[ \t]*)"
    rf"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]+)(?P=q)|(?P<bare>{_BARE_PASSWORD})(?![(.\w\[]))"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY"
    r"(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|_KEY$|^KEY$"
    # short words only as the name's last part: ``MYSQL_PWD``, ``DB_PASS``, ``--pw``; never
    # ``NUM_PASSES``, ``BYPASS_CACHE`` or ``PW_CHANNELS``
    r"|AUTH|(?:^|_)(?:PASS|PW|PWD)$)",
    re.IGNORECASE,
)
# The shell's working directories: named like a password, holding a path.
_SHELL_DIRS = frozenset({"PWD", "OLDPWD"})


def secret_name(name: str) -> bool:
    """Whether a variable, option, argument or param name says its value is secret
    (``--api-key``, ``token``, ``db.password``); a dash or a dot spells what an underscore does."""
    return name not in _SHELL_DIRS and bool(
        SECRET_NAME.search(name.lstrip("-").replace("-", "_").replace(".", "_"))
    )


class RedactionTimeout(TimeoutError):
    """The scan passed its deadline; the text must not be stored as it is."""


Gated = tuple[tuple[str, ...], re.Pattern[str]]


# Held while the detectors load and while the environment is scanned: where two threads first
# redact at once (two runs started from two threads), the second waits for the first's answers
# instead of compiling every pattern again. Reentrant: a scan loads the detectors inside it.
_ONCE = threading.RLock()


def _detectors() -> tuple[tuple[re.Pattern[str], ...], tuple[Gated, ...]]:
    """:func:`_loaded_detectors`, loaded by one thread at a time."""
    with _ONCE:
        return _loaded_detectors()


@lru_cache(maxsize=1)
def _loaded_detectors() -> tuple[tuple[re.Pattern[str], ...], tuple[Gated, ...]]:
    """The shape patterns (ours and detect-secrets' regex detectors): anchored ones, and gated
    ones with their gates. Loaded once. Left out: the public-IP detector (an address is no
    secret) and the Cloudant, IBM and SoftLayer ones, whose patterns have no literal to gate on
    and cost over 100 ms a megabyte each; a key given to such a name is still masked by the
    keyword rules."""
    with _warnings_left_alone():
        return _load_detectors()


def _keyword_detector() -> Any:
    """:func:`_loaded_keyword_detector`, loaded by one thread at a time."""
    with _ONCE:
        return _loaded_keyword_detector()


@lru_cache(maxsize=1)
def _loaded_keyword_detector() -> Any:
    """detect-secrets' keyword detector, loaded on the first line that needs it (one naming a
    secret and holding a quote): its module compiles a hundred patterns as it loads, about 5 ms
    that a run's start, whose texts seldom hold such a line, need not pay."""
    with _warnings_left_alone():
        from detect_secrets.plugins import keyword

        return keyword.KeywordDetector()


@contextmanager
def _warnings_left_alone() -> Iterator[None]:
    """detect-secrets calls ``logging.captureWarnings(True)`` when imported, which sends every
    warning of the process to logging: the user's ``warnings`` filters and
    ``catch_warnings(record=True)`` would no longer see ours (or anyone's). Undone here, unless
    the process had asked for it itself."""
    import logging
    import warnings

    before = warnings.showwarning
    try:
        yield
    finally:
        if warnings.showwarning is not before:
            logging.captureWarnings(False)


def _load_detectors() -> tuple[tuple[re.Pattern[str], ...], tuple[Gated, ...]]:
    from detect_secrets.plugins import (
        artifactory,
        aws,
        azure_storage_key,
        basic_auth,
        discord,
        github_token,
        gitlab_token,
        jwt,
        mailchimp,
        npm,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    detectors = (
        artifactory.ArtifactoryDetector,
        aws.AWSKeyDetector,
        azure_storage_key.AzureStorageKeyDetector,
        basic_auth.BasicAuthDetector,
        discord.DiscordBotTokenDetector,
        github_token.GitHubTokenDetector,
        gitlab_token.GitLabTokenDetector,
        jwt.JwtTokenDetector,
        mailchimp.MailchimpDetector,
        npm.NpmDetector,
        openai.OpenAIDetector,
        private_key.PrivateKeyDetector,
        pypi_token.PypiTokenDetector,
        sendgrid.SendGridDetector,
        slack.SlackDetector,
        square_oauth.SquareOAuthDetector,
        stripe.StripeDetector,
        telegram_token.TelegramBotTokenDetector,
        twilio.TwilioKeyDetector,
    )
    anchored: list[re.Pattern[str]] = [*TOKEN_PATTERNS, _PRIVATE_KEY]
    gated: list[Gated] = [
        (("Q~",), _AZURE_CLIENT_SECRET),
        (("Bearer", "bearer", "BEARER"), _BEARER),
    ]
    for cls in detectors:
        gate = _GATES.get(cls.__name__)
        for pattern in cls().denylist:
            if gate is None:
                anchored.append(pattern)
            else:
                gated.append((gate, pattern))
    return tuple(anchored), tuple(gated)


def _mask_match(match: re.Match[str]) -> str:
    """Mask what a detector reports as the secret: its groups when they hold the value after a
    name or a scheme, the whole match when the only group is a token's prefix (``ghp``)."""
    spans = [match.span(i) for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    start, end = match.span()
    if not spans or spans[0][0] == start:
        whole = match.group(0)
        lead = whole[: len(whole) - len(whole.lstrip())]
        trail = whole[len(whole.rstrip()) :]
        return lead + MASK + trail
    first, last = spans[0][0], max(s[1] for s in spans)
    text = match.string
    return text[start:first] + MASK + text[last:end]


_KEPT = re.compile("\x00\\d+\x01")  # a value the user said is no secret (``redact_text``)


def _mask_assigned(match: re.Match[str]) -> str:
    value = match.group("quoted") if match.group("quoted") is not None else match.group("bare")
    if value == MASK or _KEPT.fullmatch(value):
        return match.group(0)
    if match.group("quoted") is not None:
        return f"{match.group('name')}{match.group('q')}{MASK}{match.group('q')}"
    return match.group("name") + MASK


def _chunks(text: str) -> Iterator[str]:
    """Pieces of about CHUNK_CHARS, cut after a newline where there is one."""
    start = 0
    while start < len(text):
        end = start + CHUNK_CHARS
        if end < len(text):
            newline = text.rfind("\n", start, end)
            end = newline + 1 if newline > start else end
        yield text[start:end]
        start = end


def _keyword_line(line: str) -> str:
    """A line naming a secret: the value given to the name (ours and detect-secrets' rules; its
    rules all need a quote, so its detector is loaded only for a line holding one)."""
    line = _ASSIGNED_SHORT.sub(_mask_assigned, _ASSIGNED.sub(_mask_assigned, line))
    if '"' in line or "'" in line:
        for value in _keyword_detector().analyze_string(line):
            if value and value != MASK and not _KEPT.fullmatch(value):
                line = line.replace(value, MASK)
    return line


def _lines_holding(chunk: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line of ``chunk`` holding one of ``words``, found with ``str.find``
    (an alternation of words costs hundreds of milliseconds a megabyte)."""
    spans: dict[int, int] = {}
    for word in words:
        at = chunk.find(word)
        while at >= 0:
            start = chunk.rfind("\n", 0, at) + 1
            end = chunk.find("\n", at)
            end = len(chunk) if end < 0 else end
            spans[start] = end
            at = chunk.find(word, end)
    return sorted(spans.items())


def _mask_url(match: re.Match[str]) -> str:
    return match.group("scheme") + MASK + "@"


def _mask_url_word(match: re.Match[str]) -> str:
    """A URL in a text: its user info masked, written raw (``raw_userinfo``) or as URLs write
    it, and its secret query and fragment parameters (``mask_url_parameters``)."""
    url = match.group()
    span = raw_userinfo(url)
    if span is not None:
        url = url[: span[0]] + MASK + url[span[1] :]
    return mask_url_parameters(URL_USERINFO.sub(_mask_url, url), whole_fragment=False)


def mask_urls_in_json(text: str) -> str:
    """JSON ``text`` (a record read back) with every URL in its strings masked as
    ``redact_text`` masks one (user info, secret parameters). A record is input: one written by
    an older release, or by hand, may hold a remote's token, which no line may show. ``://``
    occurs in JSON only inside a string, so only the few literals around one are decoded,
    masked and written again (a scan of the whole text costs what parsing it does)."""
    pieces, done = [], 0
    at = text.find("://")
    while at >= 0:
        start, end = _unescaped_quote(text, at, -1), _unescaped_quote(text, at, 1)
        if start < done or end < 0:  # not inside a string: not JSON, json.loads will say so
            break
        pieces += [text[done:start], _masked_literal(text[start : end + 1])]
        done = end + 1
        at = text.find("://", done)
    return "".join([*pieces, text[done:]]) if pieces else text


def _unescaped_quote(text: str, at: int, step: int) -> int:
    """The nearest ``"`` before (``step`` -1) or after ``at`` that no backslash escapes."""
    while True:
        at = text.rfind('"', 0, at) if step < 0 else text.find('"', at)
        if at < 0:
            return at
        before = at - 1
        while before >= 0 and text[before] == "\\":
            before -= 1
        if (at - 1 - before) % 2 == 0:
            return at
        at += step


def _masked_literal(literal: str) -> str:
    try:
        value = json.loads(literal)
    except ValueError:
        return literal
    masked = _URL_WORD.sub(_mask_url_word, value) if isinstance(value, str) else value
    return literal if masked == value else json.dumps(masked)


def secret_parameter(name: str) -> bool:
    """Whether a URL's query or fragment parameter carries a credential: a secret-sounding name
    (``access_token``, ``api_key``, ``password``), a signed URL's signature (``sig``,
    ``signature``, and every ``X-Amz-*`` and ``X-Goog-*`` parameter of S3's and GCS's)."""
    lowered = name.strip().lower()
    return lowered.startswith(_SIGNED_URL_PREFIXES) or bool(
        secret_name(lowered) or _SIGNATURE_NAME.search(lowered)
    )


def _mask_parameters(part: str) -> str:
    """``a=1&access_token=x`` with the values of the secret parameters masked."""
    items = []
    for item in part.split("&"):
        name, equals, value = item.partition("=")
        secret = equals and value and secret_parameter(unquote(name))
        # what closes the text around a URL (a quote, a bracket) is kept, not taken for the value
        closing = value[len(value.rstrip(_CLOSING)) :]
        items.append(f"{name}={MASK}{closing}" if secret else item)
    return "&".join(items)


def mask_url_parameters(url: str, whole_fragment: bool = True) -> str:
    """``url`` with the values of its secret query parameters masked (``secret_parameter``)
    and its fragment: masked whole (``whole_fragment``: a URL that is a record's field, a git
    remote or a tracking URI, whose fragment means nothing to git or MLflow and is where an
    OAuth implicit grant puts its token), or only its secret parameters (a URL in free text,
    where a fragment is mostly a page's anchor and a diff must stay applicable)."""
    start = url.find("://")
    start = 0 if start < 0 else start + 3
    hash_at = url.find("#", start)
    head, fragment = (url, None) if hash_at < 0 else (url[:hash_at], url[hash_at + 1 :])
    query_at = head.find("?", start)
    if query_at >= 0:
        head = head[: query_at + 1] + _mask_parameters(head[query_at + 1 :])
    if fragment is None:
        return head
    if whole_fragment:
        return f"{head}#{MASK}" if fragment else f"{head}#"
    return f"{head}#{_mask_parameters(fragment)}"


def _on_lines(chunk: str, spans: list[tuple[int, int]], mask: Callable[[str], str]) -> str:
    """``chunk`` with ``mask`` applied to the lines at ``spans`` (sorted, disjoint)."""
    pieces, done = [], 0
    for start, end in spans:
        pieces += [chunk[done:start], mask(chunk[start:end])]
        done = end
    return "".join([*pieces, chunk[done:]])


def _mask_basic(match: re.Match[str]) -> str:
    """``Basic <credential>`` with the credential masked where it is the base64 of
    ``user:password`` (what an ``Authorization`` header carries); anything else is kept."""
    import base64
    import binascii

    credential = match.group(1)
    try:
        decoded = base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    if b":" not in decoded:
        return match.group(0)
    return match.group(0)[: match.start(1) - match.start()] + MASK


def _entropy_bits(text: str) -> float:
    """Shannon entropy per character: about 4.8 bits for 40 random base64 characters."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_HEXISH = frozenset("0123456789abcdefABCDEF-")
_DIGEST_NAME = re.compile(r"(?i)(?:sha\d*|md5|blake2[bs]?|xxh\d*)[-_:=]")
# Runs of letters that read as words: ``Llama``, ``checkpoints``, ``GPTQ``.
_WORD = re.compile(r"[A-Z][a-z]{2,}|[a-z]{4,}|[A-Z]{4,}")
# A folder of an absolute path as people name them: ``/tmp/``, ``/home/``, ``/Users/``.
_PATH_WORD = re.compile(r"[A-Za-z]?[a-z]{2,}")


def looks_random(token: str, before: str = "") -> bool:
    """Whether ``token`` (a run of base64/url-safe characters, ``before`` it the text just in
    front) reads as a random key rather than a name or a digest.

    Random: at least RANDOM_MIN_CHARS long, with lower and upper case letters and digits, few of
    its letters in words, and an entropy per character above what a string of that length drawn
    from 64 symbols falls under one time in a few hundred. Readable whatever its entropy: a
    hexadecimal string (git commits, run ids, digests, UUIDs, ``GPU-<uuid>``), a digest named by
    its algorithm (``sha512-...``, ``sha256=...``), and paths and names made of words
    (``TheBloke/Llama-2-13B-chat-GPTQ``); an absolute path is judged by its parts. Measured on
    random keys: 0.2 % of 40-character ones, 0.7 % of 32 and 2.5 % of 24 are taken for names
    (see tests/unit/test_redact.py)."""
    core = token.rstrip("=")
    n = len(core)
    if n < RANDOM_MIN_CHARS or _DIGEST_NAME.match(core) or _DIGEST_NAME.search(before[-8:]):
        return False
    parts = core.split("/")
    if core.startswith("/") and any(_PATH_WORD.fullmatch(part) for part in parts[1:-1]):
        return any(looks_random(part) for part in parts)  # an absolute path: part by part
    if sum(c in _HEXISH for c in core) >= 0.85 * n:
        return False
    if not (
        any(c.islower() for c in core)
        and any(c.isupper() for c in core)
        and any(c.isdigit() for c in core)
    ):
        return False
    letters = sum(c.isalpha() for c in core)
    wordy = sum(len(w) for w in _WORD.findall(core)) / max(letters, 1)
    separators = sum(c in "/_-+" for c in core)
    if wordy > 0.85 or (separators > 0.1 * n and wordy > 0.5):
        return False
    return _entropy_bits(core) >= 0.77 * math.log2(n) - 0.1


def _mask_random(match: re.Match[str]) -> str:
    text = match.string
    before = text[max(0, match.start() - 8) : match.start()]
    return MASK if looks_random(match.group(0), before) else match.group(0)


def _redact_chunk(chunk: str, secrets: list[str], keywords: bool, entropy: bool) -> str:
    """Mask one chunk of whole lines: the secret values and the anchored shapes over the chunk,
    the gated shapes and the keyword rules on the lines that may hold them, then (``entropy``)
    what is left that looks random."""
    anchored, gated = _detectors()
    for secret in secrets:
        chunk = chunk.replace(secret, MASK)
    for pattern in anchored:
        chunk = pattern.sub(_mask_match, chunk)
    for gate, pattern in gated:
        chunk = _on_lines(chunk, _lines_holding(chunk, gate), partial(pattern.sub, _mask_match))
    chunk = _on_lines(
        chunk, _lines_holding(chunk, ("://",)), partial(_URL_WORD.sub, _mask_url_word)
    )
    basic = partial(_BASIC.sub, _mask_basic)
    chunk = _on_lines(chunk, _lines_holding(chunk, ("Basic", "basic", "BASIC")), basic)
    if keywords:
        lowered = chunk.translate(_ASCII_LOWER)
        chunk = _on_lines(chunk, _lines_holding(lowered, KEYWORDS), _keyword_line)
    if entropy:
        chunk = _RANDOM_CANDIDATE.sub(_mask_random, chunk)
    return chunk


def raw_userinfo(url: str, server: bool = False) -> tuple[int, int] | None:
    """Where the user info of ``scheme://user:pass/word@host/...`` lies (start, end: at its
    ``@``) when its password holds ``/``, ``?`` or ``#`` written raw, else None. A URL parser
    ends the authority at that character: it reads the host ``user`` and the port ``pass``, and
    the rest of the password as the path, which no ``netloc`` check then finds. A port that is
    no number marks it (``user:12/34@host`` reads as port 12, as ``host:8080/me@x`` does); for
    a tracking ``server``'s URI, whose path never holds an ``@``, any ``@`` after the authority
    does. The user info is read up to the last ``@`` a host name follows (more than the
    password, where the path holds an ``@`` too: masked, never shown)."""
    start = url.find("://") + 3
    if start < 3:
        return None
    authority = url[start : _authority_end(url, start)]
    _, colon, port = authority.rpartition(":")
    odd_port = bool(colon and port and not port.isdigit() and not authority.endswith("]"))
    later_at = url.find("@", start + len(authority)) >= 0
    if not later_at or not (server or ("@" not in authority and odd_port)):
        return None
    at = min(len(url), start + USERINFO_MAX_CHARS)
    while (at := url.rfind("@", start, at)) >= 0:
        if _HOST.fullmatch(url, at + 1, _authority_end(url, at + 1)):
            return start, at
    return None


def _authority_end(url: str, start: int) -> int:
    """Where a URL parser ends the authority that begins at ``start``: at ``/``, ``?`` or ``#``."""
    found = _AUTHORITY_END.search(url, start)
    return len(url) if found is None else found.start()


def strip_url_credentials(url: str) -> str:
    """The one redactor of a URL a record or a line holds as a value (a git remote, a tracking
    URI): ``https://user:token@host/r.git?access_token=t#x`` -> ``https://host/r.git?
    access_token=***#***``. The user info is removed; scp-style ``git@host:r`` is kept (the user
    there is a fixed account name, not a credential). A password written with a character a URL
    reserves is stripped too (``raw_userinfo``; an http(s) URL is read as a server's, a tracking
    server's or a git host's, whose paths hold no ``@``). Secret query parameters and the
    fragment are masked (``mask_url_parameters``)."""
    return mask_url_parameters(_without_userinfo(url))


def _without_userinfo(url: str) -> str:
    raw = raw_userinfo(url, server=url.startswith(("http://", "https://")))
    if raw is not None:
        return url[: raw[0]] + url[raw[1] + 1 :]
    try:
        parts = urlsplit(url)
    except ValueError:
        return URL_USERINFO.sub(lambda m: m.group("scheme"), url)
    if parts.scheme and ("@" in parts.netloc):
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def found_secrets(text: str, min_length: int = 6, keep: Collection[str] | None = None) -> set[str]:
    """The secret values the scanner finds in ``text``: the whole text and each masked-out part
    at least ``min_length`` long, so either is masked wherever else it reappears. ``keep`` as
    for ``redact_text``."""
    # entropy off: a name-like value must not be masked everywhere
    out = redact_text(text, entropy=False, keep=keep)
    if out == text:
        return set()
    found = {text} if len(text) >= min_length else set()
    pieces = out.split(MASK)
    cursor = 0
    for before, after in itertools.pairwise(pieces):
        start = text.find(before, cursor)
        if start < 0:  # not the text with spans masked: the whole value stands for it
            break
        cursor = start + len(before)
        end = text.find(after, cursor) if after else len(text)
        if end < 0:
            break
        if end - cursor >= min_length:
            found.add(text[cursor:end])
        cursor = end
    return found


def secret_env_values(environ: Mapping[str, str] | None = None, min_length: int = 6) -> set[str]:
    """Values of environment variables whose names say they are secret, and the secrets found
    inside any other variable's value (a webhook in ``NOTIFY_URL``, a password in a JSON
    ``SETTINGS``)."""
    from .settings import settings

    env = environ_copy() if environ is None else environ
    keep = frozenset(settings().not_secret)
    with _ONCE:
        named = {v for k, v in env.items() if secret_name(k) and len(v) >= min_length}
        inside = {
            s for k, v in env.items() if k not in named for s in _found_once(v, min_length, keep)
        }
    return named | inside


@lru_cache(maxsize=4096)
def _found_once(text: str, min_length: int, keep: frozenset[str]) -> frozenset[str]:
    """``found_secrets``, once per value in a process: a run's start reads the environment
    several times (the run's tags, the program probe, every capture of a long run), and each
    value costs a scan of every detector (about 0.1 ms) while the answer cannot change."""
    return frozenset(found_secrets(text, min_length, keep))


def redact_text(
    text: str,
    secrets: Collection[str] | None = None,
    deadline: float | None = None,
    *,
    keywords: bool = True,
    entropy: bool | None = None,
    keep: Collection[str] | None = None,
) -> str:
    """Mask URL credentials, token shapes, values of secret names and the given secret values in
    free text. ``deadline`` (a ``time.monotonic()`` instant) bounds the scan: past it,
    ``RedactionTimeout`` is raised between two chunks. ``keywords=False`` leaves out the rules
    on secret-sounding names, for text whose names are ours (a fingerprint record names the
    package ``google-auth`` and its version); ``entropy`` (default: as ``keywords``) masks bare
    random-looking strings (``looks_random``), which a record's digests must not meet either.
    ``keep``: values that are no secret (default: ``MLFLOW_FINGERPRINT_NOT_SECRET``), left as
    they are wherever they appear."""
    if keep is None:
        from .settings import settings

        keep = settings().not_secret
    kept = sorted((k for k in keep if k and k in text), key=len, reverse=True)
    placeholders = {f"\x00{i}\x01": value for i, value in enumerate(kept)}
    for placeholder, value in placeholders.items():
        text = text.replace(value, placeholder)
    out = _redact(
        text,
        [s for s in (secrets or ()) if s not in keep],
        deadline,
        keywords,
        keywords if entropy is None else entropy,
    )
    for placeholder, value in placeholders.items():
        out = out.replace(placeholder, value)
    return out


def _redact(
    text: str, secrets: list[str], deadline: float | None, keywords: bool, entropy: bool
) -> str:
    ordered = sorted(secrets, key=len, reverse=True)
    multiline = [s for s in ordered if "\n" in s]
    for secret in multiline:  # a chunk boundary may cut these: masked over the whole text
        text = text.replace(secret, MASK)
    text = _PRIVATE_KEY.sub(MASK, text) if "PRIVATE KEY" in text else text  # may span chunks
    single = [s for s in ordered if "\n" not in s]
    if len(text) <= CHUNK_CHARS:
        return _redact_chunk(text, single, keywords, entropy)
    out = []
    for chunk in _chunks(text):
        if deadline is not None and time.monotonic() > deadline:
            raise RedactionTimeout("the secret scan ran past its deadline")
        out.append(_redact_chunk(chunk, single, keywords, entropy))
    return "".join(out)


# The key of the marks ``masked_view`` adds: drawn once per process and never shown, so a mark
# tells two masked values of one report apart and says nothing about either to anyone else.
_VIEW_KEY = _random.token_bytes(16)


def masked_view(text: str, secrets: Collection[str] | None = None, name: str | None = None) -> str:
    """A value the user stored (a param, a run name) as a report shows it: as written where
    nothing in it looks secret, else redacted and marked ``[masked #1a2b3c]``; two values that
    differ only in what was masked keep different marks, so a report still says they differ.
    A value whose ``name`` says it is secret (a param ``db_password``) is masked whole."""
    out = MASK if name is not None and text and secret_name(name) else redact_text(text, secrets)
    if out == text:
        return text
    mark = hmac.new(_VIEW_KEY, text.encode(errors="replace"), hashlib.sha256).hexdigest()[:6]
    return f"{out} [masked #{mark}]"
