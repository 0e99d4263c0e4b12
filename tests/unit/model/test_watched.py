"""``steps.jsonl`` lines of watched tensors: names, matching, round trip, refusals."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.model.watched import TensorRecord, decode, encode


def _record(**changes: object) -> TensorRecord:
    fields: dict[str, object] = {
        "step": 1,
        "phase": "backward",
        "module": "features.3",
        "kind": "Linear",
        "tensor": "weight",
        "call": 0,
        "dtype": "float32",
        "shape": (4, 2),
        "digest": "abc",
        "norm": 1.5,
    }
    fields.update(changes)
    return TensorRecord(**fields)  # type: ignore[arg-type]


def test_names_read_as_a_person_names_the_tensor() -> None:
    assert _record().name == "features.3.weight"
    assert _record(phase="forward", tensor="output", call=2).name == "features.3 output (call 2)"
    assert _record(phase="forward", module="", tensor="input").name == "(model) input"


def test_same_tensor_compares_dtype_shape_and_digest_only() -> None:
    assert _record().same_tensor(_record(norm=9.0, step=7))
    assert not _record().same_tensor(_record(digest="abd"))


def test_encode_decode_round_trip_keeps_partial() -> None:
    records = (_record(), _record(step=2, phase="optimizer", partial=True))
    assert decode(encode(records)) == records
    assert b"partial" not in encode(records[:1])


def test_decode_names_the_first_bad_line() -> None:
    data = encode([_record()]) + b"\n" + b'{"step": 2}\n'
    with pytest.raises(ValueError, match="line 3 is not a watched tensor"):
        decode(data)


def test_an_unknown_phase_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown phase"):
        _record(phase="update")
