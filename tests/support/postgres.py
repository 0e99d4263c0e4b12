"""A throwaway PostgreSQL server: initdb in a temporary directory, 127.0.0.1 on a free port.

PostgreSQL refuses to run as root, and CI runs tests as root, so when we are root every server
process runs as the ``postgres`` system account (created by the distribution's package) in a
directory handed to it. Durability settings are off: the cluster lives for one test session.
Password authentication is on, as on a real team server, so the backend URI carries a secret.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .procs import InfraError, free_port

USER = "mfp"
DATABASE = "mlflow"
SEARCH_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin")
SERVER_SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB"
)


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, newest version first."""
    candidates: list[str] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for pattern in SEARCH_DIRS:
        candidates += sorted(glob.glob(pattern), key=_version_key, reverse=True)
    for folder in candidates:
        if all((Path(folder) / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    return None


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(p) for p in path.replace("/", " ").replace("-", " ").split() if p.isdigit())


def _run_as() -> pwd.struct_passwd | None:
    """The account the server runs as: ``postgres`` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise InfraError(
            "running as root and there is no 'postgres' account to run PostgreSQL as "
            "(PostgreSQL refuses root); install the postgresql package or run as a normal user"
        ) from None


@dataclass
class Postgres:
    """A running cluster; ``uri`` is a SQLAlchemy URI with the password in it."""

    bin_dir: Path
    root: Path
    port: int
    password: str
    account: pwd.struct_passwd | None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def uri(self, database: str = DATABASE) -> str:
        return f"postgresql+psycopg2://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _cmd(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        kwargs: dict = {}
        if self.account is not None:
            kwargs = {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "HOME": str(self.root)}
        return subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kwargs,
        )

    def _check(self, what: str, result: subprocess.CompletedProcess) -> None:
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            raise InfraError(
                f"PostgreSQL {what} failed (exit {result.returncode}): " + " | ".join(tail)
            )

    def init(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        self._chown(pwfile)
        self._check(
            "initdb",
            self._cmd(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                USER,
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ),
        )
        pwfile.unlink()

    def start(self) -> None:
        self._check(
            "start",
            self._cmd(
                "pg_ctl",
                "start",
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "60",
                "-o",
                f"-p {self.port} -k {self.root} {SERVER_SETTINGS}",
                timeout=90,
            ),
        )

    def stop(self, mode: str = "immediate") -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._cmd("pg_ctl", "stop", "-D", str(self.data_dir), "-m", mode, "-w", timeout=60)

    def create_database(self, name: str = DATABASE) -> str:
        """A new empty database; returns its URI."""
        import psycopg2

        conn = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=USER, password=self.password, dbname="postgres"
        )
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return self.uri(name)

    def _chown(self, path: Path) -> None:
        if self.account is not None:
            os.chown(path, self.account.pw_uid, self.account.pw_gid)


def missing_message() -> str:
    return (
        "PostgreSQL is not installed: no initdb/pg_ctl/postgres in PATH or "
        f"{', '.join(SEARCH_DIRS)}; install it (Debian/Ubuntu: apt-get install postgresql)"
    )


@contextlib.contextmanager
def running_postgres(attempts: int = 3) -> Iterator[Postgres]:
    """A started cluster with the ``mlflow`` database, stopped and deleted on exit."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise InfraError(missing_message())
    account = _run_as()
    # Not under pytest's tmp_path: that lives in a 0700 root directory the postgres account
    # cannot enter. mkdtemp's directory is 0700 too, but ours to hand over.
    root = Path(tempfile.mkdtemp(prefix="mfp-pg-"))
    pg = Postgres(bin_dir, root, 0, secrets.token_hex(12), account)
    try:
        pg._chown(root)
        pg.init()
        for attempt in range(attempts):  # a free port can be taken between choice and bind
            pg.port = free_port()
            try:
                pg.start()
                break
            except InfraError:
                if attempt == attempts - 1:
                    raise
        pg.create_database()
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
