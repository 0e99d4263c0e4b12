"""Credentials never survive into what we record."""

from __future__ import annotations

import base64
import json
import random
import string
import time

import pytest

from mlflow_fingerprint.capture.program import redact_argv
from mlflow_fingerprint.redact import (
    MASK,
    RedactionTimeout,
    found_secrets,
    looks_random,
    masked_view,
    redact_text,
    secret_env_values,
    secret_name,
    strip_url_credentials,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:secret-token@example.com/r.git", "https://example.com/r.git"),
        ("https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r", "https://github.com/o/r"),
        ("http://u:p%40ss@host:8080/x?y=1", "http://host:8080/x?y=1"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("ssh://git@host/r.git", "ssh://host/r.git"),
        ("https://example.com/r.git", "https://example.com/r.git"),
        # a password holding '/', '?' or '#' written raw: a URL parser reads "user" as the host
        # and "s3cr" as its port, and the rest of the password as the path
        ("http://user:s3cr/etPW@127.0.0.1:9/", "http://127.0.0.1:9/"),
        ("http://user:s3cr#etPW@127.0.0.1:9/x", "http://127.0.0.1:9/x"),
        ("https://user:s3cr?etPW@host", "https://host"),
        ("http://user:12/34@host:5000", "http://host:5000"),  # the port a number: a server's
        ("http://u:p@ss/w@host:5000/x", "http://host:5000/x"),
        (
            "postgresql://u:pa/ss@db.example.com:5432/mlflow",
            "postgresql://db.example.com:5432/mlflow",
        ),
        ("http://[::1]:5000/x", "http://[::1]:5000/x"),
        ("file:///tmp/a@b/mlruns", "file:///tmp/a@b/mlruns"),
        # issue 45: secret query parameters and the fragment are masked too
        (
            "https://host/org/repo.git?access_token=t0k3n",
            "https://host/org/repo.git?access_token=***",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=f00&v=1",
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&v=1",
        ),
        (
            "https://a.blob.core.windows.net/c?sv=2&sig=abc%3D",
            "https://a.blob.core.windows.net/c?sv=2&sig=***",
        ),
        (
            "http://h/x?key=1&password=p&secret=s&token=t&page=2",
            "http://h/x?key=***&password=***&secret=***&token=***&page=2",
        ),
        ("https://u:p@h/cb?state=1#access_token=t&x=1", "https://h/cb?state=1#***"),
        ("https://h/r.git?keyword=a&monkey=b", "https://h/r.git?keyword=a&monkey=b"),
    ],
)
def test_strip_url_credentials(url: str, expected: str) -> None:
    assert strip_url_credentials(url) == expected


def test_a_url_in_text_has_its_secret_parameters_masked_and_its_anchor_kept() -> None:
    """Even where the rules on secret names are off (a record's own text): a URL is masked by
    its shape. A page anchor stays, so a diff holding a link still applies."""
    text = (
        "remote https://host/org/repo.git?access_token=t0k3nvalue and "
        "https://docs.python.org/3/library/re.html#re.sub and https://h/cb#id_token=t0k3nvalue"
    )
    out = redact_text(text, keywords=False, entropy=False)
    assert "t0k3nvalue" not in out
    assert "access_token=***" in out
    assert "id_token=***" in out
    assert "re.html#re.sub" in out


def test_redact_text_masks_urls_tokens_and_known_values() -> None:
    text = (
        "uri=https://admin:hunter2@mlflow.example.com key=AKIAABCDEFGHIJKLMNOP "
        "hf=hf_abcdefghijklmnopqrstuvwxyz gh=ghp_abcdefghijklmnopqrstuvwxyz012345 other=s3cr3tvalue"
    )
    out = redact_text(text, {"s3cr3tvalue"})
    for secret in (
        "hunter2",
        "AKIAABCDEFGHIJKLMNOP",
        "hf_abcdefghijklmnop",
        "ghp_abcdefghij",
        "s3cr3tvalue",
    ):
        assert secret not in out
    assert "mlflow.example.com" in out


@pytest.mark.parametrize(
    "url",
    [
        "http://user:s3cr/etPW@127.0.0.1:9/",
        "http://user:s3cr#etPW@127.0.0.1:9/api",
        "postgresql://u:s3cr?etPW@db.example.com/mlflow",
    ],
)
def test_redact_text_masks_a_password_written_with_a_reserved_character(url: str) -> None:
    out = redact_text(f"API request to {url}/api/2.0/mlflow/runs/get failed: refused")
    assert "s3cr" not in out, out
    assert "etPW" not in out, out
    assert "failed: refused" in out


@pytest.mark.parametrize(
    "name",
    ["--pwd", "--pass", "pw", "passphrase", "MYSQL_PWD", "DB_PASS", "db.password", "--db-pw"],
)
def test_short_names_for_a_password_are_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        *("PWD", "OLDPWD", "num_passes", "--passes", "BYPASS_CACHE", "compass", "lr"),
        *("--pw-channels", "pass_through", "password_min"),
    ],
)
def test_words_that_only_hold_those_letters_are_not(name: str) -> None:
    """The shell's working directories, and words with "pass" inside; ``password_min`` is a
    name that says "password" and so is one (masked: a recipe loses it, nothing leaks)."""
    assert secret_name(name) is (name == "password_min")


def test_short_names_for_a_password_mask_what_is_given_to_them_in_text() -> None:
    text = "login failed pw=Zq9xK1pw7811 db_pass: Zq9xK3pw7813 num_passes=12 bypass=cached"
    out = redact_text(text)
    assert "Zq9x" not in out, out
    assert "num_passes=12 bypass=cached" in out
    assert redact_text('login = dict(user="bob", pw="Zq9xD7pw7767")') == (
        'login = dict(user="bob", pw="***")'
    )


@pytest.mark.parametrize(
    "line",
    [
        "        self.pw = nn.Conv2d(c, c, 1, groups=1)",  # a pointwise convolution
        "    pw = conv1x1(channels)",
        "forward_pass = model(batch)",
        "first_pass = True",
        "    pass",
    ],
)
def test_code_that_uses_those_names_for_other_things_is_left_as_written(line: str) -> None:
    """A diff masked where nothing was secret could no longer be applied by a rerun."""
    assert redact_text(line) == line


def test_the_shells_working_directory_is_no_secret_and_mysqls_password_is() -> None:
    found = secret_env_values({"PWD": "/home/ada/project", "MYSQL_PWD": "Zq9xK1pw7811"})
    assert found == {"Zq9xK1pw7811"}


def test_a_stored_value_whose_name_says_secret_is_masked_whole() -> None:
    """A param ``db_password`` the user logged: a report shows that it differs, not what it is."""
    shown = masked_view("plainword", name="db_password")
    assert "plainword" not in shown
    assert shown.startswith(MASK)
    assert shown != masked_view("otherword", name="db_password")
    assert masked_view("plainword", name="lr") == "plainword"


def test_secret_env_values_by_name() -> None:
    env = {
        "MY_API_TOKEN": "abcdef123",
        "DB_PASSWORD": "pw-123456",
        "AWS_SECRET_ACCESS_KEY": "x" * 40,
        "HOME": "/root",
        "SHORT_TOKEN": "ab",
    }
    assert secret_env_values(env) == {"abcdef123", "pw-123456", "x" * 40}


def test_a_records_own_names_are_kept_when_keywords_are_off() -> None:
    """``google-auth`` and ``detect-secrets`` are package names in a fingerprint, not secrets."""
    record = '{"packages": {"google-auth": "2.62.2", "detect-secrets": "1.5.0"}}'
    assert redact_text(record, set(), keywords=False) == record
    assert "2.62.2" not in redact_text(record)  # as free text, a value given to "auth" goes


def test_found_secrets_takes_what_the_scanner_masks_inside_a_value() -> None:
    settings = '{"user": "svc", "password": "Tr0ub4dor-and-3"}'
    found = found_secrets(settings)
    assert "Tr0ub4dor-and-3" in found
    assert settings in found
    assert found_secrets("plain value with nothing secret") == set()
    env = {"SETTINGS": settings, "HOME": "/root"}
    assert "Tr0ub4dor-and-3" in secret_env_values(env)
    assert "/root" not in secret_env_values(env)


def test_what_is_found_in_the_environment_follows_its_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A value is scanned once per process, yet a value that changes, a new variable and a
    value the user then says is no secret all show in the next call."""
    settings = '{"user": "svc", "password": "Tr0ub4dor-and-3"}'
    env = {"SETTINGS": settings, "HOME": "/root"}
    assert "Tr0ub4dor-and-3" in secret_env_values(env)
    env["SETTINGS"] = settings.replace("Tr0ub4dor-and-3", "C0rrect-h0rse-9")
    found = secret_env_values(env)
    assert "C0rrect-h0rse-9" in found
    assert "Tr0ub4dor-and-3" not in found
    env["NOTIFY_URL"] = "https://bot:S3cr3t-w3bh00k@hooks.example.com/x"
    assert env["NOTIFY_URL"] in secret_env_values(env)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_NOT_SECRET", "C0rrect-h0rse-9")
    assert "C0rrect-h0rse-9" not in secret_env_values(env)


def test_a_long_text_is_scanned_in_chunks_and_stops_at_its_deadline() -> None:
    line = "+    loss = model(batch) * weight  # a line of code\n"
    token = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = line * 5000 + f"+TOKEN = '{token}'\n" + line * 5000
    out = redact_text(text)
    assert token not in out
    assert out.count("\n") == text.count("\n")
    with pytest.raises(RedactionTimeout):
        redact_text(text, deadline=time.monotonic() - 1)


# -- what detect-secrets misses (issue 25): each shape the package adds, with its test ------------


B64 = string.ascii_letters + string.digits + "+/"


def random_key(rng: random.Random, n: int, alphabet: str = B64) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_an_http_basic_credential_is_masked_where_it_decodes_to_user_and_password() -> None:
    credential = base64.b64encode(b"deploy:Zq8-Tr0ub4dor").decode()
    for line in (
        f"Authorization: Basic {credential}",
        f'headers = {{"Authorization": "Basic {credential}"}}',
        f"curl -H 'authorization: basic {credential}' https://x",
    ):
        assert credential not in redact_text(line, keywords=False, entropy=False), line
    for kept in ("basic configuration", "Basic usage of the API", "BASIC QWxhZGRpbg"):
        assert redact_text(kept, entropy=False) == kept  # no ':' inside: not a credential


def test_a_bare_random_key_is_masked_on_argv_and_in_messages() -> None:
    rng = random.Random(25)
    aws = random_key(rng, 40)
    assert redact_argv(["train.py", aws, f"--creds={aws}"], set()) == [
        "train.py",
        MASK,
        f"--creds={MASK}",
    ]
    message = f"RuntimeError: login failed for {aws} (retry later)"
    assert aws not in redact_text(message)
    assert redact_text(message, entropy=False) == message  # the rule is the entropy one


def test_most_random_keys_are_masked_and_measured() -> None:
    """The recall the docstring of ``looks_random`` states, on seeded random keys."""
    rng = random.Random(7)
    for n, floor in ((40, 0.99), (32, 0.985), (24, 0.96)):
        keys = [random_key(rng, n) for _ in range(2000)]
        found = sum(looks_random(k) for k in keys) / len(keys)
        assert found >= floor, (n, found)


@pytest.mark.parametrize(
    "readable",
    [
        "2d5d2f3a49c1406c0d5682b02b71c4e1ea3d27f1",  # a git commit
        "50ed96930c52475b8c5e48b27e0ebcf8",  # an MLflow run id
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        "GPU-a63d1f5e-24b7-4c09-8f2a-5e9b0c7d1a36",  # an NVML UUID
        "TheBloke/Llama-2-13B-chat-GPTQ",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
        "experiment_2024_05_04_ResNet50_lr1e-3_bs256",
        "/tmp/tmp8l4hb0q2/spool/20261125T153137Z-0bd67ea1fd14",
        "lightning_logs/version_12/checkpoints/epoch=3-step=1200.ckpt",
    ],
)
def test_hashes_ids_digests_and_names_stay_readable(readable: str) -> None:
    assert redact_text(f"--x {readable}") == f"--x {readable}"


def test_a_value_marked_not_secret_is_kept_wherever_it_appears(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(3)
    dataset = random_key(rng, 40)
    text = f"data={dataset} password={dataset} token='{dataset}' other=ghp_{random_key(rng, 36)}"
    assert dataset not in redact_text(text)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_NOT_SECRET", f"unused,{dataset}")
    out = redact_text(text)
    assert out.count(dataset) == 3
    assert "ghp_" not in out  # everything else is masked as before
    monkeypatch.setenv("MLFLOW_FINGERPRINT_NOT_SECRET", json.dumps([dataset, "a,b"]))
    assert redact_text(text).count(dataset) == 3


def test_a_users_value_is_shown_masked_with_a_mark_that_tells_two_apart() -> None:
    a = masked_view("postgresql://svc:Tr0ub4dor-one@db/app")
    b = masked_view("postgresql://svc:Tr0ub4dor-two@db/app")
    assert "Tr0ub4dor" not in a + b
    assert a.startswith("postgresql://***@db/app [masked #")
    assert a != b
    assert a == masked_view("postgresql://svc:Tr0ub4dor-one@db/app")
    assert masked_view("0.001") == "0.001"


def test_two_threads_scanning_the_environment_at_once_load_the_detectors_once() -> None:
    """Two runs started from two threads scan the environment at once: the second waits for the
    first's detectors and answers instead of compiling every pattern again beside it."""
    import threading

    from mlflow_fingerprint import redact

    environ = {"NOTIFY_URL": f"https://hooks.example.com/x?token={'Zq8' * 8}", "HOME": "/home/u"}
    redact._loaded_detectors.cache_clear()
    redact._found_once.cache_clear()
    gate = threading.Barrier(2)
    found: list[set[str]] = []

    def scan() -> None:
        gate.wait()
        found.append(redact.secret_env_values(environ))

    threads = [threading.Thread(target=scan) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found[0] == found[1]
    assert found[0]
    assert redact._loaded_detectors.cache_info().misses == 1


def test_the_keyword_detector_loads_on_the_first_quoted_line_naming_a_secret() -> None:
    """detect-secrets' keyword detector costs a run's start about 5 ms to load: texts without a
    quoted line naming a secret never load it, and the first that has one does, and is masked
    by its rules (``==`` is none of ours)."""
    from mlflow_fingerprint import redact

    redact._loaded_keyword_detector.cache_clear()
    plain = "python train.py --lr 0.1 --token-budget 4096\nkey = value\n"
    assert redact_text(plain, entropy=False) == plain
    assert redact._loaded_keyword_detector.cache_info().misses == 0
    assert redact_text('if password == "hunter2xyz":') == 'if password == "***":'
    assert redact._loaded_keyword_detector.cache_info().misses == 1


def test_a_record_read_back_has_the_tokens_of_its_urls_masked() -> None:
    """A record is input (issue 45): one written by an older release, or by hand, whose git
    remote keeps a token in its query is shown by ``show`` and ``diff`` with it masked; the
    JSON stays valid whatever the strings around the URL hold (escaped quotes, backslashes)."""
    import json

    from mlflow_fingerprint.compare.resolve import parse_record
    from mlflow_fingerprint.redact import mask_urls_in_json
    from support.records import cpu_record, edit

    token = "t0k3n-in-a-query"
    record = edit(cpu_record(), **{"git.remote_url": f"https://h/r.git?access_token={token}"})
    read, _ = parse_record(json.dumps(record), "crafted")
    assert read["git"]["remote_url"] == "https://h/r.git?access_token=***"
    tricky = {"a": "x\\", "b": f'say "https://u:{token}@h/?sig={token}" \\ "q"', "c": "c:d"}
    masked = json.loads(mask_urls_in_json(json.dumps(tricky)))
    assert masked == {**tricky, "b": 'say "https://***@h/?sig=***" \\ "q"'}
