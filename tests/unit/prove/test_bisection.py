"""The bisect's own logic (``prove/bisection.py``) outside its reruns: which switches it tries
where runs vary, how many reruns it runs at once, what it says no rerun could set, and where the
differences no rerun sets are placed. The search is in ``test_search.py``; whole bisects with
real reruns are in ``tests/system/bisect/``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlflow_fingerprint.compare.settable import Knob
from mlflow_fingerprint.prove.bisection import (
    Bisection,
    _verdict_without_cause,
    jobs_for,
    measured_consequences,
    switches_for,
)
from mlflow_fingerprint.prove.curves import Metrics
from mlflow_fingerprint.prove.launch import Job
from mlflow_fingerprint.prove.process import Finished, LocalProcess, free_cores
from mlflow_fingerprint.prove.rerunner import Rerunner
from mlflow_fingerprint.prove.results import Cause, Rerun
from mlflow_fingerprint.prove.search import Conclusion
from mlflow_fingerprint.tracking.history import History
from support.recorded import recorded, setup_of
from support.records import cpu_record, edit, seeded

DETERMINISTIC = "determinism.deterministic_algorithms"
SEED, WORKERS = "seeds.requested", "data.num_workers"


def test_an_unseeded_run_without_deterministic_kernels_tries_them_before_the_seed() -> None:
    a = cpu_record()
    assert a["seeds"]["requested"] is None
    assert a["determinism"]["deterministic_algorithms"] is False
    tried = switches_for(a, a)
    assert [(k.key, k.a, k.b) for k in tried] == [
        (DETERMINISTIC, False, True),
        ("seeds.requested", None, 0),
    ]
    assert {k.kind for k in tried} == {"apply"}


def test_a_switch_already_on_in_either_run_or_seeded_runs_are_not_tried() -> None:
    a = cpu_record()
    on = edit(a, **{DETERMINISTIC: True})
    assert [k.key for k in switches_for(a, on)] == ["seeds.requested"]
    assert [k.key for k in switches_for(seeded(a, 1), seeded(a, 2))] == [DETERMINISTIC]


class OneAtATime:
    """An executor that is no pool: it runs one job at a time (never called here)."""

    def execute(self, job: Job) -> Finished:
        raise AssertionError(job)


def test_reruns_at_once_are_what_was_asked_else_what_the_executor_holds() -> None:
    assert jobs_for(3, None) == 3
    assert jobs_for(None, LocalProcess(slots=4)) == 4
    assert jobs_for(None, OneAtATime()) == 1
    assert jobs_for(None, None) == free_cores() >= 1


def test_what_a_cause_produced_is_beneath_it_and_what_a_kept_curve_had_is_ruled_out() -> None:
    end = Conclusion((Cause("seeds.requested", 0, 1, "randomness"),), ("data.num_workers",), ())
    digest, source = "seeds.state_digests.torch_cpu", "program.sources.digest"
    reruns = [
        Rerun("r1", {"data.num_workers": 2}, "a", None, None, frozenset({WORKERS, source})),
        Rerun("r2", {SEED: 1, "x": 1}, "b", 2, None, frozenset({SEED, "x"})),
        Rerun("r3", {SEED: 1}, "b", 2, None, frozenset({SEED, digest})),
    ]
    causes, ruled = measured_consequences(end, (digest, source, "untouched"), reruns)
    assert causes == (Cause("seeds.requested", 0, 1, "randomness", (digest,)),)
    assert ruled == ("data.num_workers", source)  # "untouched": no rerun set it, neither


def h(*values: float) -> History:
    return History(np.arange(len(values)), np.array(values, dtype=np.float64))


def bisection(tmp_path: Path, a: dict, b: dict) -> Bisection:
    ra, rb = recorded("A", a), recorded("B", b)
    runner = Rerunner(ra, tmp_path, tmp_path, ["loss"], LocalProcess(), 60.0, until=3)
    fields = frozenset(d.field for d in setup_of(ra, rb).differences)
    metrics = (Metrics({"loss": h(3, 2, 1, 0)}, {}), Metrics({"loss": h(3, 2, 5, 6)}, {}))
    return Bisection(runner, rb, fields, metrics, width=2)


def test_what_no_rerun_gave_b_s_value_is_what_cannot_be_set(tmp_path: Path) -> None:
    a = cpu_record()
    b = edit(a, **{"params.lr": "0.1", "seeds.requested": 1})
    job = bisection(tmp_path, edit(a, **{"params.lr": "0.2"}), b)
    s = setup_of(job.runner.a, recorded("B", b))
    job.unapplied.add(DETERMINISTIC)  # forced, and the training's record did not show it
    assert job.unreached(s.differences) == (DETERMINISTIC, "params.lr")
    assert _verdict_without_cause(job, s, ("gpu.name",)) == (
        "not_settable",
        ("gpu.name", DETERMINISTIC, "params.lr"),
    )
    # a rerun that had B's lr (set through what the program reads) reached it
    job.reruns.append(Rerun("r1", {}, "a", None, None, frozenset({"params.lr", DETERMINISTIC})))
    assert job.unreached(s.differences) == ()
    assert _verdict_without_cause(job, s, ()) == ("not_reproducible", ())


def test_two_reruns_agree_only_bit_for_bit_inside_the_window(tmp_path: Path) -> None:
    job = bisection(tmp_path, cpu_record(), seeded(cpu_record(), 1))
    job.metrics_of = {
        "r1": Metrics({"loss": h(3, 2, 1, 0, 9)}, {}),
        "r2": Metrics({"loss": h(3, 2, 1, 0, 8)}, {}),  # apart only past step 3
        "r3": Metrics({"loss": h(3, 2, 1.5)}, {}),
    }
    job.stopped = {"r1": True, "r2": True, "r3": True}
    assert job.agree("r1", "r2")
    assert not job.agree("r1", "r3")
    assert job.compared("r1", job.metrics_a).same
    assert job.compared("r3", job.metrics_b).parted == 2
    assert Bisection._why([]) == "A with B's nothing (A as recorded)"
    knob = Knob("apply", "seeds.requested", "seeds.requested", None, 1, "randomness")
    assert Bisection._why([knob]) == "A with B's seeds.requested=1"
