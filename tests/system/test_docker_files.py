"""Static checks of docker/: no Docker engine is needed (none runs in CI).

The compose file is read with PyYAML and the Dockerfiles with a small instruction parser.
`docker compose config` runs only where the compose client is installed.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest
import yaml  # a dependency of mlflow

from support.paths import ROOT

DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
ENV_EXAMPLE = DOCKER / ".env.example"
TRAINING_DOCKERFILES = ["Dockerfile", "Dockerfile.cpu"]
ALL_DOCKERFILES = [*TRAINING_DOCKERFILES, "mlflow/Dockerfile"]

SECRET_KEY = re.compile(r"PASSWORD|SECRET|KEY|TOKEN", re.IGNORECASE)
# ${VAR} or ${VAR:?message}: never a default (${VAR:-x}) that could inline a secret.
VAR_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:?\?[^}]*)?\}")
# An exact version in an image tag: 3.11.14-slim, 0.1.0-cpu, RELEASE.2025-09-07T16-13-09Z.
EXACT_TAG = re.compile(r"^(\d+\.\d+\.\d+|RELEASE\.\d{4}-\d{2}-\d{2}T[\d-]+Z)([-.+].*)?$")
# Images whose releases have two-part versions (postgres 17.6 is a patch release).
TWO_PART_VERSIONS = re.compile(r"^(\d+\.\d+)([-.].*)?$")
TWO_PART_IMAGES = {"postgres"}


# --- helpers -----------------------------------------------------------------


def parse_dockerfile(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, line continuations joined, comments dropped."""
    instructions, buf = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        keyword, _, rest = (buf + line).partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        buf = ""
    assert not buf, f"{path}: dangling line continuation"
    return instructions


def substitute(text: str, args: dict[str, str]) -> str:
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)",
        lambda m: args.get(m.group(1) or m.group(2), m.group(0)),
        text,
    )


def arg_defaults(instructions: list[tuple[str, str]]) -> dict[str, str]:
    out = {}
    for keyword, rest in instructions:
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            out[name.strip()] = value.strip().strip("\"'")
    return out


def final_stage(instructions):
    """(base image with ARG defaults resolved, instructions of the last stage, its ARGs)."""
    froms = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    assert froms, "no FROM"
    global_args = arg_defaults(instructions[: froms[0]])
    image = substitute(instructions[froms[-1]][1].split()[0], global_args)
    stage = instructions[froms[-1] + 1 :]
    return image, stage, arg_defaults(stage)


def env_vars(stage) -> dict[str, str]:
    out = {}
    for keyword, rest in stage:
        if keyword == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                out[name] = value
    return out


def split_image(ref: str) -> tuple[str, str | None]:
    ref = ref.split("@", 1)[0]
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, None
    return name, tag


def assert_pinned(ref: str) -> None:
    name, tag = split_image(ref)
    assert tag, f"image {ref!r} has no tag"
    assert tag != "latest", f"image {ref!r} uses latest"
    assert "$" not in ref, f"image {ref!r} is not fully resolved"
    exact = EXACT_TAG.match(tag) or (name in TWO_PART_IMAGES and TWO_PART_VERSIONS.match(tag))
    assert exact, f"image {ref!r}: tag {tag!r} is not an exact version"


def yaml_strings(node) -> list[str]:
    """Every string in the loaded YAML (comments are gone: compose does not interpolate them)."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*yaml_strings(k), *yaml_strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in yaml_strings(item)]
    return [node] if isinstance(node, str) else []


def var_names(text: str) -> set[str]:
    """Names interpolated by compose; `$$` escapes (for the container's shell) excluded."""
    return set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", text))


def walk_env(services: dict):
    for name, service in services.items():
        env = service.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.partition("=")[::2] for item in env)
        for key, value in env.items():
            yield name, key, value


def container_ports(service: dict) -> set[int]:
    ports = set()
    for port in service.get("ports", []):
        target = port.get("target") if isinstance(port, dict) else str(port).rsplit(":", 1)[-1]
        ports.add(int(str(target).split("/")[0]))
    return ports


def read_env_example() -> dict[str, str]:
    out = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example: not KEY=VALUE: {line!r}"
            out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def completed_dependencies(services: dict) -> set[str]:
    return {
        dep
        for service in services.values()
        for dep, cond in (service.get("depends_on") or {}).items()
        if isinstance(cond, dict) and cond.get("condition") == "service_completed_successfully"
    }


def bucket_init_service(services: dict) -> str:
    candidates = [
        name
        for name, service in services.items()
        if "minio/mc" in service.get("image", "") and " mb " in f" {service.get('command')} "
    ]
    assert len(candidates) == 1, f"expected one bucket-creating mc service, got {candidates}"
    return candidates[0]


# --- docker-compose.yml ------------------------------------------------------


def test_stack_services_present(services):
    assert {"postgres", "minio", "mlflow"} <= services.keys()
    bucket_init_service(services)


def test_published_ports(services):
    assert 5000 in container_ports(services["mlflow"])
    assert 9000 in container_ports(services["minio"])


def test_long_running_services_have_healthchecks(services):
    one_shot = completed_dependencies(services)
    long_running = [n for n, s in services.items() if n not in one_shot and not s.get("profiles")]
    assert {"postgres", "minio", "mlflow"} <= set(long_running)
    for name in long_running:
        check = services[name].get("healthcheck") or {}
        assert check.get("test"), f"{name} has no healthcheck"
        assert not check.get("disable"), f"{name} disables its healthcheck"
    assert "pg_isready" in str(services["postgres"]["healthcheck"]["test"])
    assert "/health" in str(services["mlflow"]["healthcheck"]["test"])


def test_mlflow_waits_for_database_and_bucket(services):
    depends = services["mlflow"]["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    init = bucket_init_service(services)
    assert depends[init]["condition"] == "service_completed_successfully"
    assert services[init]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_mlflow_uses_postgres_and_minio(services):
    mlflow = services["mlflow"]
    command = mlflow["command"]
    command = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    assert command[:2] == ["mlflow", "server"]
    assert command[command.index("--host") + 1] == "0.0.0.0"
    backend = command[command.index("--backend-store-uri") + 1]
    assert re.fullmatch(r"postgresql://\$\{\w+\}:\$\{\w+\}@postgres:5432/\$\{\w+\}", backend)
    flags = [f for f in ("--artifacts-destination", "--default-artifact-root") if f in command]
    assert flags, "no artifact location"
    assert command[command.index(flags[0]) + 1].startswith("s3://")
    assert mlflow["environment"]["MLFLOW_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= mlflow["environment"].keys()


def test_mlflow_server_image_matches_its_dockerfile(services):
    build = services["mlflow"]["build"]
    dockerfile = (
        COMPOSE.parent / build["context"] / build.get("dockerfile", "Dockerfile")
    ).resolve()
    assert dockerfile == (DOCKER / "mlflow" / "Dockerfile").resolve()
    _, stage, args = final_stage(parse_dockerfile(dockerfile))
    installs = " ".join(substitute(rest, args) for kw, rest in stage if kw == "RUN")
    for package in ("mlflow", "psycopg2-binary", "boto3"):
        assert re.search(rf"\b{package}==\d+(\.\d+)+", installs), f"{package} not pinned"
    _, tag = split_image(services["mlflow"]["image"])
    assert tag == args["MLFLOW_VERSION"], "mlflow server image tag != MLFLOW_VERSION"


def test_no_secret_inlined(services):
    for service, key, value in walk_env(services):
        if SECRET_KEY.search(key):
            assert isinstance(value, str), f"{service}.{key} is not a ${{VAR}} reference"
            assert VAR_REF.fullmatch(value), (
                f"{service}.{key}={value!r} is not a ${{VAR}} reference"
            )
    text = COMPOSE.read_text()
    secrets = {k: v for k, v in read_env_example().items() if SECRET_KEY.search(k)}
    assert secrets, ".env.example defines no credentials"
    for key, value in secrets.items():
        assert value, f".env.example: {key} is empty"
        assert value not in text, (
            f"the value of {key} from .env.example is written in the compose file"
        )


def test_env_example_defines_every_required_variable(compose):
    text = "\n".join(yaml_strings(compose))
    defaulted = set(re.findall(r"(?<!\$)\$\{(\w+):?-", text))
    missing = var_names(text) - defaulted - read_env_example().keys()
    assert not missing, f"used in docker-compose.yml but not in .env.example: {sorted(missing)}"
    assert "cp docker/.env.example docker/.env" in ENV_EXAMPLE.read_text()


def test_every_image_pinned(services):
    for name, service in services.items():
        assert "image" in service, f"{name}: no image (a built service needs a name and tag too)"
        assert_pinned(service["image"])


def test_named_volumes_for_data(compose, services):
    declared = set(compose.get("volumes") or {})
    for name, path in (("postgres", "/var/lib/postgresql/data"), ("minio", "/data")):
        mounts = {str(v).split(":")[1]: str(v).split(":")[0] for v in services[name]["volumes"]}
        assert mounts.get(path) in declared, f"{name}: {path} is not on a named volume"


def test_trainer_services_build_the_training_images(services):
    for name, service in services.items():
        build = service.get("build")
        if not isinstance(build, dict) or build.get("context") != "..":
            continue
        assert service.get("profiles"), f"{name} should start only on request (profiles)"
        assert (ROOT / build["dockerfile"]).is_file()
        assert build["args"]["IMAGE_NAME"] == service["image"]
        assert service["environment"]["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"


# --- Dockerfiles -------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_DOCKERFILES)
def test_dockerfile_base_pinned_and_user_non_root(name):
    image, stage, _ = final_stage(parse_dockerfile(DOCKER / name))
    assert_pinned(image)
    users = [rest.split(":")[0] for kw, rest in stage if kw == "USER"]
    assert users, f"{name}: no USER, runs as root"
    assert users[-1] not in {"root", "0"}, f"{name}: last USER is root"
    env = env_vars(stage)
    assert env.get("PYTHONUNBUFFERED") == "1"
    assert env.get("PIP_NO_CACHE_DIR") in {"1", "off", "true"}


@pytest.mark.parametrize("name", TRAINING_DOCKERFILES)
def test_training_image_installs_this_package(name):
    _, stage, args = final_stage(parse_dockerfile(DOCKER / name))
    copies = [shlex.split(rest) for kw, rest in stage if kw == "COPY"]
    assert copies, f"{name}: copies nothing from the repository"
    sources = {src.rstrip("/") for copy in copies for src in copy[:-1] if not src.startswith("--")}
    assert {"pyproject.toml", "src"} <= sources
    for src in sources:
        if src == "README.md" and not (ROOT / src).exists():
            continue  # not written yet; pip install will need it
        assert (ROOT / src).exists(), f"{name}: COPY {src}, which is not in the repository"
    dest = next(copy[-1] for copy in copies if "pyproject.toml" in copy[:-1]).rstrip("/")
    runs = [substitute(rest, args) for kw, rest in stage if kw == "RUN"]
    workdir = None
    installed = False
    for kw, rest in stage:
        if kw == "WORKDIR":
            workdir = rest.rstrip("/")
        if kw != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", rest):
            words = shlex.split(command)
            if any(pair == ("pip", "install") for pair in pairwise(words)):
                installed |= dest in words or (workdir == dest and "." in words)
    assert installed, f"{name}: no pip install of {dest} (the copied source)"
    assert any(re.search(r"\btorch==\d+\.\d+\.\d+\b", run) for run in runs), f"{name}: torch"


def test_dockerignore_keeps_what_the_dockerfiles_copy():
    for name in TRAINING_DOCKERFILES:
        ignore = DOCKER / f"{name}.dockerignore"
        assert ignore.is_file(), f"{ignore.name} missing: the whole repo would be the context"
        patterns = [
            line.strip()
            for line in ignore.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        for path in ("pyproject.toml", "README.md", "src", "src/mlflow_fingerprint/__init__.py"):
            excluded = False
            for pattern in patterns:  # last match wins, as in Docker
                negate = pattern.startswith("!")
                pattern = pattern.lstrip("!").rstrip("/")
                parts = path.split("/")
                prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
                if any(fnmatch.fnmatch(p, pattern) for p in prefixes):
                    excluded = not negate
            assert not excluded, f"{ignore.name} excludes {path}"
        assert patterns[0] == "*", f"{ignore.name} should allow-list the context"


def torch_pin(name: str) -> tuple[str, str, str]:
    image, stage, args = final_stage(parse_dockerfile(DOCKER / name))
    runs = " ".join(substitute(rest, args) for kw, rest in stage if kw == "RUN")
    version = re.search(r"\btorch==(\d+\.\d+\.\d+)", runs)
    index = re.search(r"--index-url\s+\"?(https://download\.pytorch\.org/whl/(\w+))", runs)
    assert version, f"{name}: torch is not pinned to an exact version"
    assert index, f"{name}: torch is not installed from the PyTorch index"
    return image, version.group(1), index.group(2)


def test_cuda_image_torch_matches_base_cuda():
    image, version, variant = torch_pin("Dockerfile")
    name, tag = split_image(image)
    assert name in {"nvidia/cuda", "pytorch/pytorch"}, image
    cuda = re.search(r"cuda(\d+)\.(\d+)" if name == "pytorch/pytorch" else r"^(\d+)\.(\d+)", tag)
    assert cuda, f"no CUDA version in {image}"
    assert variant == f"cu{cuda.group(1)}{cuda.group(2)}", f"torch {variant} on CUDA {tag}"
    assert version == torch_pin("Dockerfile.cpu")[1], "CPU and CUDA images pin different torch"


def test_cpu_image_uses_cpu_wheel():
    image, version, variant = torch_pin("Dockerfile.cpu")
    assert split_image(image)[1].startswith("3.11."), image
    assert (version, variant) == ("2.13.0", "cpu")


@pytest.mark.parametrize("name", TRAINING_DOCKERFILES)
def test_image_name_recorded(name):
    _, stage, _ = final_stage(parse_dockerfile(DOCKER / name))
    arg_at = next(
        (i for i, (kw, r) in enumerate(stage) if kw == "ARG" and r.split("=")[0] == "IMAGE_NAME"),
        None,
    )
    env_at = next(
        (i for i, (kw, r) in enumerate(stage) if kw == "ENV" and "MLFLOW_FINGERPRINT_IMAGE" in r),
        None,
    )
    assert arg_at is not None, f"{name}: no ARG IMAGE_NAME after FROM (an ARG before FROM is unset)"
    assert env_at is not None, f"{name}: MLFLOW_FINGERPRINT_IMAGE not set"
    assert env_at > arg_at
    assert env_vars(stage)["MLFLOW_FINGERPRINT_IMAGE"] == "${IMAGE_NAME}"
    commands = [json.loads(r) for kw, r in stage if kw in {"CMD", "ENTRYPOINT"}]
    assert ["fingerprint", "capture"] in commands, f"{name}: default command"


# --- optional: the real compose client ---------------------------------------


def compose_client() -> list[str] | None:
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if not shutil.which(cmd[0]):
            continue
        out = subprocess.run([*cmd, "version"], capture_output=True, text=True, check=False)
        major = re.search(r"v?(\d+)\.\d+", out.stdout)
        if out.returncode == 0 and major and int(major.group(1)) >= 2:
            return cmd
    return None


def test_compose_client_accepts_the_file():
    cmd = compose_client()
    if cmd is None:
        pytest.skip("no Docker Compose v2 client on PATH (docker compose plugin or docker-compose)")
    out = subprocess.run(
        [*cmd, "-f", str(COMPOSE), "--env-file", str(ENV_EXAMPLE), "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr


def test_compose_schema():
    schema_path = os.environ.get("COMPOSE_SPEC_SCHEMA")
    if not schema_path or not Path(schema_path).is_file():
        pytest.skip("no offline compose-spec JSON schema (set COMPOSE_SPEC_SCHEMA to its path)")
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(
        yaml.safe_load(COMPOSE.read_text()), json.loads(Path(schema_path).read_text())
    )
