"""A corpus of secret shapes, built at test time from parts and a seeded generator, so the
repository holds no literal that a secret scanner would take for a live credential.

Each entry is a ``Planted``: the secret value (what must never be stored) and the line it is
planted in (the context a scanner sees: a bare token, ``DB_PASSWORD=...``, a JSON field, a DSN).
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Planted:
    name: str
    secret: str
    line: str


def corpus(seed: int = 14) -> list[Planted]:
    """About fifty shapes: cloud keys, code-host and AI-API tokens, webhooks, DSNs, private keys,
    JWTs, passwords in JSON, URLs and assignments."""
    rng = random.Random(seed)

    def r(n: int, chars: str = ALNUM) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    def p(*parts: str) -> str:
        return "".join(parts)

    out: list[Planted] = []

    def add(name: str, secret: str, line: str | None = None) -> None:
        out.append(Planted(name, secret, secret if line is None else line))

    # cloud
    add("aws access key id", p("AK", "IA", r(16, UPPER)))
    aws_secret = r(40, B64)
    add("aws secret key", aws_secret, f'aws_secret_access_key = "{aws_secret}"')
    add("aws session key id", p("AS", "IA", r(16, UPPER)))
    add("gcp api key", p("AI", "za", r(35, URLSAFE)))
    pem_body = r(64, B64)
    add(
        "gcp service account key",
        pem_body,
        p('{"type": "service_account", "private_key": "-----BEGIN ', "PRIVATE KEY-----\\n")
        + pem_body
        + p("\\n-----END ", 'PRIVATE KEY-----\\n"}'),
    )
    azure_key = r(86, B64) + "=="
    add(
        "azure storage key",
        azure_key,
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={azure_key};"
        "EndpointSuffix=core.windows.net",
    )
    add("azure ad client secret", p(r(3), "8Q", "~", r(34, URLSAFE)))
    azure_sig = r(43, ALNUM) + "%3D"
    add(
        "azure sas signature",
        azure_sig,
        f"https://acme.blob.core.windows.net/c/x?sv=2022-11-02&sr=b&sig={azure_sig}",
    )
    # code hosts
    add("github classic token", p("gh", "p_", r(36)))
    add("github oauth token", p("gh", "o_", r(36)))
    add("github fine-grained token", p("github", "_pat_", r(22), "_", r(59)))
    add("gitlab token", p("gl", "pat-", r(20, URLSAFE)))
    add("bitbucket app password", p("AT", "BB", r(32)))
    add("npm token", p("np", "m_", r(36)))
    npmrc = f"{r(8, HEX)}-{r(4, HEX)}-{r(4, HEX)}-{r(4, HEX)}-{r(12, HEX)}"
    add("npmrc auth token", npmrc, f"//registry.npmjs.org/:_authToken={npmrc}")
    add("pypi token", p("py", "pi-", "AgEIcHlwaS5vcmc", r(80, URLSAFE)))
    add("shopify token", p("sh", "pat_", r(32, HEX)))
    # AI APIs
    add("openai project key", p("sk", "-proj-", r(48, URLSAFE)))
    add("openai legacy key", p("sk", "-", r(20), "T3Blbk", "FJ", r(20)))
    add("anthropic key", p("sk", "-ant-api03-", r(93, URLSAFE)))
    add("hugging face token", p("h", "f_", r(34)))
    # payments, messaging
    add("stripe secret key", p("sk", "_live_", r(24)))
    add("stripe restricted key", p("rk", "_live_", r(24)))
    add("stripe long key", p("sk", "_live_", r(99)))
    add("sendgrid key", p("S", "G.", r(22, URLSAFE), ".", r(43, URLSAFE)))
    add("twilio api key", p("S", "K", r(32, HEX)))
    add("mailchimp key", p(r(32, HEX), "-us", "12"))
    add("square oauth secret", p("sq0", "csp-", r(43, URLSAFE)))
    add("telegram bot token", p(str(rng.randint(10**8, 10**9 - 1)), ":", r(35, URLSAFE)))
    # chat and webhooks
    digits = string.digits
    add("slack bot token", p("xo", "xb-", r(12, digits), "-", r(13, digits), "-", r(24)))
    add("slack user token", p("xo", "xp-", r(12, string.digits), "-", r(24)))
    add(
        "slack webhook",
        p("https://hooks.", "slack.com/services/T", r(10, UPPER), "/B", r(10, UPPER), "/", r(24)),
    )
    add(
        "discord webhook",
        p("https://discord.com/api/", "webhooks/", r(18, string.digits), "/", r(68, URLSAFE)),
    )
    add("discord bot token", p("M", r(23, URLSAFE), ".", r(6, URLSAFE), ".", r(27, URLSAFE)))
    # DSNs and URLs with passwords
    for scheme in ("postgres", "mysql", "mongodb+srv", "amqp"):
        password = r(16)
        add(f"{scheme} dsn", password, f"{scheme}://svc:{password}@db.internal:5432/app")
    redis = r(20)
    add("redis dsn", redis, f"redis://:{redis}@cache.internal:6379/0")
    userinfo = r(18)
    add("basic auth url", userinfo, f"https://deploy:{userinfo}@artifacts.example.com/simple/")
    api_key = r(32)
    add("api key in query", api_key, f"https://api.example.com/v2/items?api_key={api_key}&page=2")
    access = r(40, URLSAFE)
    add("token in query", access, f"https://api.example.com/me?access_token={access}")
    # private keys, JWTs, bearer
    rsa = r(64, B64)
    add(
        "rsa private key",
        rsa,
        p("-----BEGIN RSA ", "PRIVATE KEY-----\n")
        + rsa
        + "\n"
        + r(64, B64)
        + "\n"
        + p("-----END RSA ", "PRIVATE KEY-----"),
    )
    ssh = r(70, B64)
    add(
        "openssh private key",
        ssh,
        p("-----BEGIN OPENSSH ", "PRIVATE KEY-----\n")
        + ssh
        + "\n"
        + p("-----END OPENSSH ", "PRIVATE KEY-----"),
    )
    add("jwt", p("ey", "J", r(20, URLSAFE), ".ey", "J", r(40, URLSAFE), ".", r(43, URLSAFE)))
    bearer = r(40, URLSAFE)
    add("bearer header", bearer, f"Authorization: Bearer {bearer}")
    basic = base64.b64encode(f"deploy:{r(16)}".encode()).decode()
    add("basic auth header", basic, f"Authorization: Basic {basic}")
    # bare keys: nothing before them says what they are, only that they look random
    add("bare aws secret key", r(40, B64))
    add("bare api key", r(32))
    add("bare url-safe secret", r(43, URLSAFE))
    # passwords given to names
    pw = r(14) + "!"
    add("password in json", pw, f'{{"user": "svc", "password": "{pw}"}}')
    client_secret = r(30)
    add("client secret in json", client_secret, f'{{"client_secret": "{client_secret}"}}')
    db_password = r(16)
    add("dotenv password", db_password, f"DB_PASSWORD={db_password}")
    token = r(24)
    add("exported token", token, f"export API_TOKEN={token}")
    yaml_pw = r(15)
    add("yaml password", yaml_pw, f"password: {yaml_pw}")
    libpq = r(17)
    add("libpq password", libpq, f"host=db user=svc password={libpq} dbname=app")
    signing = r(32)
    add("signing key assignment", signing, f'SIGNING_KEY = "{signing}"')
    # short names for a password, and a password holding a '/' written as it is
    for name, template in (
        ("short password name", "login(user='svc', pw={})"),
        ("mysql password variable", "MYSQL_PWD={}"),
        ("db pass in yaml", "db_pass: {}"),
        ("url password with a slash", "https://deploy:{}/" + r(8) + "@artifacts.example.com/x/"),
    ):
        secret = r(15)
        add(name, secret, template.format(secret))
    return out
