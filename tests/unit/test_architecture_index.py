"""``docs/architecture.md`` lists every module of the package (issue 49): its index is written
from the tree by ``scripts/architecture_index.py``, and this fails when the page is stale, so a
new module cannot go unlisted."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from support.paths import ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "architecture_index", ROOT / "scripts" / "architecture_index.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_lists_every_module_as_the_tree_has_them() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert generator().rewritten(page) == page, "run: python scripts/architecture_index.py"
    package = ROOT / "src" / "mlflow_fingerprint"
    for path in package.rglob("*.py"):
        assert f"- `{path.relative_to(package).as_posix()}`: " in page


def test_a_module_added_to_the_tree_makes_the_page_stale(tmp_path: Path) -> None:
    """The check can fail: a package with one module more is a page with one line more."""
    gen = generator()
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package. More words."""\n')
    (package / "sub" / "one.py").write_text('"""One thing, e.g. this. The rest."""\n')
    page = gen.rewritten("# Architecture\n\nProse.\n", package)
    assert "- `sub/one.py`: One thing, e.g. this." in page
    assert "- `__init__.py`: The package." in page
    assert page.startswith("# Architecture\n\nProse.\n\n")
    (package / "sub" / "two.py").write_text('"""Two."""\n')
    assert gen.rewritten(page, package) != page
    assert gen.rewritten(gen.rewritten(page, package), package) == gen.rewritten(page, package)
