"""PEP 562 lazy public names, and public names kept over submodules of the same name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from mlflow_fingerprint.lazy import keep_public_names, lazy_names

NAME = "mfp_lazy_probe"


@pytest.fixture
def package() -> Iterator[ModuleType]:
    module = ModuleType(NAME)
    sys.modules[NAME] = module
    yield module
    del sys.modules[NAME]


def test_a_lazy_name_is_imported_on_first_use_and_then_kept(package: ModuleType) -> None:
    getattr_ = lazy_names(NAME, {"dedent": "textwrap"})
    import textwrap

    assert getattr_("dedent") is textwrap.dedent
    assert vars(package)["dedent"] is textwrap.dedent
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        getattr_("missing")


def test_a_public_name_is_not_replaced_by_a_submodule(package: ModuleType) -> None:
    def capture() -> None: ...

    package.capture = capture  # type: ignore[attr-defined]
    keep_public_names(NAME, {"capture"})
    package.capture = ModuleType(f"{NAME}.capture")  # type: ignore[attr-defined]
    assert package.capture is capture  # type: ignore[attr-defined]
    package.other = ModuleType("other")  # type: ignore[attr-defined]
    assert isinstance(package.other, ModuleType)  # type: ignore[attr-defined]
