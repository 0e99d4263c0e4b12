"""Options as the program saw them, defaults included (``capture/options.py``): read from the
program's argparse Namespace and parser, click's context, or ``options=``, without patching or
running anything of the program's."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import click
import pytest

from mlflow_fingerprint.capture import RunInfo, capture
from mlflow_fingerprint.capture.options import FoundOptions, find, from_value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("-w", "--num-workers", dest="workers", type=int, default=0)
    p.add_argument("--augment", action="store_true")
    p.add_argument("--api-key", default=None)
    return p


def test_the_namespace_of_a_calling_frame_gives_every_option_with_its_default() -> None:
    p = parser()
    args = p.parse_args(["--lr", "0.02"])  # noqa: F841 - found in this frame by find()
    found = find(sys._getframe())
    assert found == FoundOptions(
        "argparse", {"lr": 0.02, "num-workers": 0, "augment": False, "api-key": None}
    )


def test_a_parser_alone_gives_its_defaults_and_the_command_line_the_rest(monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "-w", "2"])

    def caller(p: argparse.ArgumentParser) -> FoundOptions | None:
        return find(sys._getframe())

    found = caller(parser())
    assert found is not None
    assert found.source == "argparse"
    assert found.values == {"lr": 0.05, "num-workers": "2", "augment": False, "api-key": None}


def test_the_options_of_a_click_command_with_their_defaults() -> None:
    seen: list[FoundOptions | None] = []

    @click.command()
    @click.option("--lr", type=float, default=0.05)
    @click.option("--num-workers", type=int, default=0)
    def train(lr: float, num_workers: int) -> None:
        seen.append(find(sys._getframe()))

    train.main(["--lr", "0.02"], standalone_mode=False)
    assert seen == [FoundOptions("click", {"lr": 0.02, "num-workers": 0})]


def test_options_handed_over_in_any_common_form() -> None:
    @dataclasses.dataclass
    class Config:
        lr: float = 0.05
        optimizer: dict = dataclasses.field(default_factory=lambda: {"name": "sgd"})

    assert from_value(argparse.Namespace(num_workers=2)) == {"num-workers": 2}
    assert from_value(Config()) == {"lr": 0.05, "optimizer.name": "sgd"}
    assert from_value({"lr": 0.05, "layers": (1, 2)}) == {"lr": 0.05, "layers": [1, 2]}
    with pytest.raises(TypeError, match="options must be"):
        from_value(3)


def test_the_recorded_options_are_redacted_and_say_where_they_were_read() -> None:
    values = {"lr": 0.05, "api-key": "sk-live-0123456789abcdef", "url": "https://u:pw@host/x"}
    record = capture(run=RunInfo(options=FoundOptions("decorator", values))).to_dict()
    options = record["program"]["options"]
    assert options["lr"] == 0.05
    assert options["api-key"] == "***"
    assert "pw" not in options["url"]
    assert record["program"]["options_source"] == "decorator"
    plain = capture().to_dict()["program"]
    assert plain["options_source"] == "argv"
