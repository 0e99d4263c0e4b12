"""DataLoaders: batch size, workers, generator, sampler, dataset and collate_fn.

The worker count changes results only where workers draw random numbers or decide the order
(``conditions.num_workers``).
"""

from __future__ import annotations

from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    Rule(
        "data.loaders.*.batch_size",
        "recipe",
        "A different batch size changes the optimisation itself (and which kernels run).",
        cite.BATCH_SIZE,
        prior=3,
        priority=30,
    ),
    declared_rule(
        "data.declared.batch_size",
        "A different batch size changes the optimisation itself (and which kernels run).",
        cite.BATCH_SIZE,
        prior=3,
        priority=40,
    ),
    Rule(
        "data.declared.epochs",
        "recipe",
        "A different number of epochs trains for a different number of steps.",
        cite.KERAS_FIT,
        prior=3,
        priority=45,
    ),
    Rule(
        "data.loaders.*.num_workers",
        "randomness",
        "Random numbers drawn inside DataLoader workers (augmentation) come from per-worker "
        "seeds, so a different worker count gives different random draws, unless the dataset "
        "declares draws_random=False.",
        cite.NUM_WORKERS,
        prior=3,
        condition=cond.num_workers,
        priority=110,
    ),
    declared_rule(
        "data.declared.num_workers",
        "Random numbers drawn inside DataLoader workers (augmentation) come from per-worker "
        "seeds, so a different worker count gives different random draws, unless the dataset "
        "declares draws_random=False.",
        cite.NUM_WORKERS,
        prior=3,
        condition=cond.num_workers,
        priority=120,
    ),
    Rule(
        "data.loaders.*.generator",
        "randomness",
        "The DataLoader generator drives shuffling and worker seeds; without a seeded one they "
        "come from the global RNG.",
        cite.LOADER,
        prior=2,
        priority=130,
    ),
    Rule(
        "data.loaders.*.worker_init_fn",
        "randomness",
        "A different worker_init_fn seeds the workers' random streams differently.",
        cite.LOADER,
        prior=2,
        priority=140,
    ),
    Rule(
        "data.loaders.*.persistent_workers",
        "randomness",
        "Persistent workers keep their random state across epochs instead of reseeding.",
        cite.LOADER,
        prior=1,
        priority=150,
    ),
    Rule(
        "data.loaders.*.in_order",
        "randomness",
        "Out-of-order batch delivery changes which batch comes when.",
        cite.LOADER,
        prior=1,
        priority=160,
    ),
    Rule(
        "data.loaders.*.shuffle",
        "randomness",
        "Shuffling on or off changes the data order.",
        cite.LOADER,
        prior=2,
        priority=170,
    ),
    Rule(
        "data.loaders.*.sampler",
        "randomness",
        "A different sampler changes the data order.",
        cite.LOADER,
        prior=2,
        priority=180,
    ),
    Rule(
        "data.loaders.*.drop_last",
        "recipe",
        "Dropping or keeping the last short batch changes the updates made.",
        cite.BATCH_SIZE,
        prior=1,
        priority=190,
    ),
    Rule(
        "data.loaders.*.dataset",
        "recipe",
        "The runs trained on different data.",
        cite.DATASET,
        prior=3,
        priority=200,
    ),
    Rule(
        "data.loaders.*.dataset.draws_random",
        "recipe",
        "One run's data loading draws random numbers (augmentation) and the other's does not.",
        cite.DATASET,
        prior=3,
        condition=cond.draws_random,
        priority=210,
    ),
    Rule(
        "data.loaders.*.collate_fn",
        "recipe",
        "A different collate_fn assembles the batches differently.",
        cite.DATASET,
        prior=2,
        priority=220,
    ),
    Rule(
        "data.loaders.*.pin_memory",
        "none",
        "Pinned memory only speeds up host-to-GPU copies.",
        cite.NOT_ARITHMETIC,
        priority=230,
    ),
    Rule(
        "data.loaders.*.prefetch_factor",
        "none",
        "How many batches are prefetched does not change their content or order.",
        cite.NOT_ARITHMETIC,
        priority=240,
    ),
    declared_rule(
        "data.captured_at_stage",
        "When the data section was read.",
        cite.NOT_ARITHMETIC,
        priority=250,
    ),
)
