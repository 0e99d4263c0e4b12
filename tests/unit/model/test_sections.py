"""The typed section views, read from real captures: each attribute is the recorded value where
it has the declared type, and None (or empty) where it is missing, unavailable or mistyped."""

from __future__ import annotations

from dataclasses import fields
from typing import get_type_hints

from mlflow_fingerprint.model.record import read, unavailable
from mlflow_fingerprint.model.sections import Data, Git, Gpu, Numerics, Program, Seeds
from support.records import cpu_record, edit, gpu_record, seeded

GONE = unavailable("could not be read")
SECTIONS = (Seeds, Data, Numerics, Program, Git, Gpu)


def test_each_attribute_is_typed_as_its_reader_reads_it() -> None:
    """``at(FIELD)`` hides the reader's type from the type checker: an attribute read by
    ``read`` is the field's declared type or None, any other the type its reader returns."""
    for section in SECTIONS:
        hints = get_type_hints(section)
        for attribute in fields(section):
            reader, path = attribute.metadata["reader"], attribute.metadata["path"]
            want = path.kind | None if reader is read else get_type_hints(reader)["return"]
            assert hints[attribute.name] == want, (section.__name__, attribute.name)


def test_seeds_read_a_real_capture_and_a_seeded_one() -> None:
    record = cpu_record()
    seeds = Seeds.from_record(record)
    assert seeds.torch_initial_seed == record["seeds"]["torch_initial_seed"]
    assert seeds.torch_seed_recorded
    assert (seeds.requested, seeds.seeded_by, seeds.pythonhashseed) == (None, None, None)
    assert seeds.hash_randomization is True
    assert seeds.captured_at_stage == "capture"
    again = Seeds.from_record(seeded(record, 7))
    assert (again.requested, again.seeded_by, again.torch_initial_seed) == (7, "test", 7)


def test_a_mistyped_or_unavailable_seed_reads_as_none() -> None:
    record = edit(
        cpu_record(),
        **{
            "seeds.requested": "7",  # a hand-edited string where a count is due
            "seeds.hash_randomization": 1,
            "seeds.torch_initial_seed": GONE,
            "seeds.at_first_step": {"torch_initial_seed": True, "state_digests": GONE},
        },
    )
    seeds = Seeds.from_record(record)
    assert (seeds.requested, seeds.hash_randomization, seeds.torch_initial_seed) == (None,) * 3
    assert (seeds.first_step_seed, seeds.first_step_digests) == (None, None)
    # unreadable, yet recorded: what ``facts.trained_seed`` tells from a record without the field
    assert seeds.torch_seed_recorded
    assert not Seeds.from_record({}).torch_seed_recorded


def test_gpu_reads_the_devices_nvml_saw_and_none_without_a_driver() -> None:
    gpu = Gpu.from_record(gpu_record("h100"))
    assert [d["name"] for d in gpu.devices] == ["NVIDIA H100 80GB HBM3"]
    assert gpu.driver_version == "580.159.04"
    none = Gpu.from_record(cpu_record())  # the section is ``unavailable``: no NVIDIA driver
    assert (none.devices, none.driver_version) == ((), None)
    odd = Gpu.from_record(edit(cpu_record(), **{"gpu": {"devices": [GONE, 3, "x"]}}))
    assert odd.devices == (GONE,)  # a device NVML could not read stays; a non-mapping does not


def test_data_keeps_loaders_that_are_mappings_and_the_declared_settings() -> None:
    loader = {"batch_size": 8, "num_workers": 2}
    record = edit(cpu_record(), **{"data.loaders": [loader, 5], "data.declared": {"epochs": 3}})
    data = Data.from_record(record)
    assert data.loaders == (loader,)
    assert data.declared == {"epochs": 3}
    assert Data.from_record(edit(cpu_record(), **{"data": GONE})) == Data((), None)


def test_numerics_reads_precisions_and_the_override() -> None:
    record = cpu_record()
    numerics = Numerics.from_record(record)
    assert numerics.fp32_precision == record["numerics"]["fp32_precision"]
    assert numerics.tf32_override is None  # recorded as unset
    changed = edit(record, **{"numerics.env.NVIDIA_TF32_OVERRIDE": "0"})
    assert Numerics.from_record(changed).tf32_override == "0"
    gone = edit(record, **{"numerics.fp32_precision": GONE, "numerics.env.NVIDIA_TF32_OVERRIDE": 0})
    assert Numerics.from_record(gone) == Numerics(None, None)


def test_program_and_git_read_what_a_rerun_needs() -> None:
    record = gpu_record("h100")  # a capture of this process, in this repository
    program = Program.from_record(record)
    assert program.argv == tuple(record["program"]["argv"])
    assert program.entry == record["program"]["entry"]
    assert program.sources == record["program"]["sources"]["files"]
    options = record["program"]["options"]  # this process's: unavailable under some command lines
    assert program.options == (None if "unavailable" in options else options)
    assert program.cwd == record["program"]["cwd"]
    git = Git.from_record(record)
    assert (git.commit, git.dirty) == (record["git"]["commit"], record["git"]["dirty"])
    edited = edit(
        record,
        **{
            "program.options": unavailable("the command line is not --name value pairs"),
            "program.argv": "train.py --lr 1",  # not a list
            "git.untracked_files": ["notes/", 3, "train.py"],
            "git.dirty": "yes",
        },
    )
    program, git = Program.from_record(edited), Git.from_record(edited)
    assert (program.options, program.argv) == (None, None)
    assert git.untracked_files == ("notes/", "train.py")
    assert git.dirty is None
