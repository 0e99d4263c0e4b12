"""Distributed jobs: world size, backend, NCCL, and each rank compared with its peer.

A rank's fields are compared only where both runs recorded that rank, and its hashes count
only where they say more than rank 0's fields, which are compared one by one.
"""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule

RULES: tuple[Rule, ...] = (
    Rule(
        "distributed.world_size",
        "recipe",
        "A different number of processes: the global batch (per-device batch × world size), the "
        "data each rank sees and the order gradients are summed in all change.",
        cite.WORLD,
        prior=3,
        condition=cond.world_size,
        priority=10,
    ),
    Rule(
        "distributed.backend",
        "numerics",
        "A different collective backend sums gradients in a different order.",
        cite.NCCL,
        prior=2,
        priority=700,
    ),
    Rule(
        "distributed.env",
        "numerics",
        "NCCL's algorithm and protocol settings change the order gradients are summed in.",
        cite.NCCL,
        prior=2,
        condition=cond.nccl,
        priority=710,
    ),
    Rule(
        "cuda.nccl_version",
        "numerics",
        "A different NCCL may sum gradients in a different order.",
        cite.NCCL,
        prior=2,
        condition=cond.nccl,
        priority=720,
    ),
    Rule(
        "distributed.rank",
        "none",
        "Which rank wrote the fingerprint.",
        cite.NOT_ARITHMETIC,
        priority=1020,
    ),
    Rule(
        "distributed.local_rank",
        "none",
        "Which rank wrote the fingerprint.",
        cite.NOT_ARITHMETIC,
        priority=1030,
    ),
    Rule(
        "distributed.hostname",
        "none",
        "The machine's name.",
        cite.NOT_ARITHMETIC,
        priority=1040,
    ),
    Rule(
        "distributed.ranks",
        "none",
        "Where a rank ran (host, local rank); its hashes and stack are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=1050,
    ),
    Rule(
        "distributed.ranks.*.hashes.numerics",
        "numerics",
        "This rank computed with different numerics flags; the all-reduce sums its gradients "
        "with everyone else's, so the whole run changes.",
        cite.WORLD,
        prior=3,
        condition=cond.rank_hash,
        priority=1060,
    ),
    Rule(
        "distributed.ranks.*.hashes.recipe",
        "recipe",
        "This rank ran a different recipe (seed, data or code).",
        cite.WORLD,
        prior=2,
        condition=cond.rank_hash,
        priority=1070,
    ),
    Rule(
        "distributed.ranks.*.hashes.env",
        "numerics",
        "This rank ran on a different hardware or software stack.",
        cite.WORLD,
        prior=2,
        condition=cond.rank_hash,
        priority=1080,
    ),
    Rule(
        "distributed.ranks.*.gpu",
        "numerics",
        "This rank ran on a different GPU model, whose kernels round differently.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.rank_gpu,
        priority=1090,
    ),
    Rule(
        "distributed.ranks.*.compute_capability",
        "numerics",
        "This rank's GPU has a different compute capability: different kernels and reduction "
        "orders.",
        cite.GPU_MODEL,
        prior=3,
        condition=cond.rank_gpu,
        priority=1100,
    ),
    Rule(
        "distributed.ranks.*.sm_count",
        "numerics",
        "This rank's GPU has a different number of SMs, which splits cuBLAS's work differently.",
        cite.SM_COUNT,
        prior=3,
        condition=cond.rank_gpu,
        priority=1110,
    ),
    Rule(
        "distributed.ranks.*.torch",
        "numerics",
        "This rank ran a different torch release, with different kernels.",
        cite.TORCH,
        prior=3,
        condition=cond.both_ranked,
        priority=1120,
    ),
    Rule(
        "distributed.ranks.*.driver",
        "numerics",
        "This rank's GPU driver differs; rarely a cause by itself.",
        cite.DRIVER,
        prior=1,
        condition=cond.rank_driver,
        priority=1130,
    ),
    Rule(
        "distributed.ranks.*.backend",
        "numerics",
        "This rank used a different collective backend.",
        cite.NCCL,
        prior=2,
        condition=cond.both_ranked,
        priority=1140,
    ),
    Rule(
        "distributed.ranks.*.hashes.fingerprint",
        "none",
        "Summary of the rank's three hashes, which are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=1150,
    ),
    Rule(
        "distributed.distinct",
        "none",
        "How many different stacks the ranks had; the ranks are compared one by one.",
        cite.WORLD,
        priority=1160,
    ),
    Rule(
        "distributed.heterogeneous",
        "none",
        "Whether the ranks differed among themselves; the ranks are compared one by one.",
        cite.WORLD,
        priority=1170,
    ),
    Rule(
        "distributed.initialized",
        "none",
        "Whether a process group existed; its size and backend are compared on their own.",
        cite.NOT_ARITHMETIC,
        priority=1180,
    ),
)
