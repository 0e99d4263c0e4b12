"""An S3-compatible artifact store: moto's server mode in its own process on 127.0.0.1.

A separate process (not moto's in-process thread) so that the store keeps answering while a
test holds the GIL, and so that MLflow's server and the test client reach it the same way, over
HTTP at ``endpoint``. Credentials are dummies; they are still credentials, so they are planted
in the secrets test like any other.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .procs import free_port, kill_group, port_open, wait_for

BUCKET = "mlflow-artifacts"
ACCESS_KEY = "AKIAMFPTESTKEY000001"
SECRET_KEY = "mfp-test-secret-key-0123456789abcdef0123"
REGION = "us-east-1"


@dataclass
class S3Store:
    endpoint: str
    bucket: str
    proc: subprocess.Popen
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

    def list_keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` in the bucket (paginated)."""
        out: list[str] = []
        for page in (
            self.client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=self.bucket, Prefix=prefix)
        ):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out

    def read(self, key: str) -> bytes:
        return self.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()


def s3_env(endpoint: str) -> dict[str, str]:
    """What any process talking to the store needs (MLflow server and direct-upload clients)."""
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "MLFLOW_S3_ENDPOINT_URL": endpoint,
        # never read a developer's real ~/.aws profile into a test
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }


@contextlib.contextmanager
def running_s3(bucket: str = BUCKET) -> Iterator[S3Store]:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="mfp-moto-", suffix=".log")[1])
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"
    store = S3Store(endpoint, bucket, proc, log, s3_env(endpoint))
    try:
        wait_for(
            lambda: port_open(port),
            60,
            "moto S3 server",
            alive=lambda: proc.poll() is None,
            log=log,
        )
        store.client().create_bucket(Bucket=bucket)
        yield store
    finally:
        kill_group(proc)
        log.unlink(missing_ok=True)
