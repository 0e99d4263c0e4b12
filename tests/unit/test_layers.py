"""The layers of pyproject.toml's import contract, for the imports no import tool sees: those
named by a string (the CLI's dispatch, the packages' lazy public names). ``make lint`` runs the
contract itself (import-linter) over every import statement, function-level ones included."""

from __future__ import annotations

import ast
import tomllib
from importlib.util import resolve_name
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "src" / "mlflow_fingerprint"
# Where the package imports a module named by a string: module -> the dict literal naming them.
DISPATCH = {
    "mlflow_fingerprint": "_SOURCES",  # the container itself: any layer, still resolved below
    "mlflow_fingerprint.compare": "_SOURCES",
    "mlflow_fingerprint.run": "_SOURCES",
    "mlflow_fingerprint.integrations": "_LAZY",
    "mlflow_fingerprint.cli.main": "HANDLERS",
}


def layers() -> dict[str, int]:
    """Each top-level module or package of the contract, with its layer (0: the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = config["contracts"]
    return {
        name.strip(): depth
        for depth, layer in enumerate(contract["layers"])
        for name in layer.replace("|", ":").split(":")
    }


def source_of(module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.exists() else PACKAGE / relative.with_suffix(".py")


def named(module: str, variable: str) -> list[str]:
    """The modules ``module``'s dict ``variable`` names, resolved as its code resolves them."""
    tree = ast.parse(source_of(module).read_text())
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)
    ]
    texts = [ast.literal_eval(v) for v in value.values]  # type: ignore[attr-defined]
    package = module if source_of(module).name == "__init__.py" else module.rpartition(".")[0]
    if variable == "HANDLERS":  # "cmd_diff:run" under the CLI's package
        return [f"{package}.{text.split(':')[0]}" for text in texts]
    if variable == "_LAZY":  # a submodule's name
        return [f"{package}.{text}" for text in texts]
    return [resolve_name(text, package) for text in texts]


def layer_of(module: str, depth: dict[str, int]) -> int:
    return depth[module.split(".")[1]]


def test_every_top_level_module_is_in_one_layer() -> None:
    depth = layers()
    present = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.parent.name for p in PACKAGE.glob("*/__init__.py")
    }
    assert present - {"__init__"} == set(depth)


def test_the_modules_named_by_strings_lie_in_their_importers_layer_or_below() -> None:
    depth = layers()
    upward = []
    for module, variable in DISPATCH.items():
        targets = named(module, variable)
        assert targets, (module, variable)
        for target in targets:
            assert source_of(target).exists(), f"{module} names {target}, which does not exist"
            if module != "mlflow_fingerprint" and layer_of(target, depth) < layer_of(module, depth):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_other_module_imports_by_name() -> None:
    """A new ``import_module`` of the package's own modules must join DISPATCH, or the layers
    above would not see it: the lazy-name helper and the dispatchers are the only callers."""
    callers = sorted(
        ".".join(("mlflow_fingerprint", *p.relative_to(PACKAGE).with_suffix("").parts))
        for p in PACKAGE.rglob("*.py")
        if "import_module(" in p.read_text() and 'import_module("torch' not in p.read_text()
    )
    assert callers == [
        "mlflow_fingerprint.cli.main",
        "mlflow_fingerprint.integrations.__init__",
        "mlflow_fingerprint.lazy",
    ]
