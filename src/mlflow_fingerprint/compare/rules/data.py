"""DataLoaders: batch size, workers, generator, sampler, dataset and collate_fn.

The worker count changes results only where workers draw random numbers or decide the order
(``conditions.num_workers``).
"""

from __future__ import annotations

from ...model.fields import (
    DATA_CAPTURED_AT_STAGE,
    DATA_DECLARED_BATCH_SIZE,
    DATA_DECLARED_EPOCHS,
    DATA_DECLARED_NUM_WORKERS,
    DATA_LOADERS_EACH_BATCH_SIZE,
    DATA_LOADERS_EACH_COLLATE_FN,
    DATA_LOADERS_EACH_DATASET,
    DATA_LOADERS_EACH_DATASET_DRAWS_RANDOM,
    DATA_LOADERS_EACH_DROP_LAST,
    DATA_LOADERS_EACH_GENERATOR,
    DATA_LOADERS_EACH_IN_ORDER,
    DATA_LOADERS_EACH_NUM_WORKERS,
    DATA_LOADERS_EACH_PERSISTENT_WORKERS,
    DATA_LOADERS_EACH_PIN_MEMORY,
    DATA_LOADERS_EACH_PREFETCH_FACTOR,
    DATA_LOADERS_EACH_SAMPLER,
    DATA_LOADERS_EACH_SHUFFLE,
    DATA_LOADERS_EACH_WORKER_INIT_FN,
)
from .. import citations as cite
from .. import conditions as cond
from .base import Rule, declared_rule

RULES: tuple[Rule, ...] = (
    Rule(
        DATA_LOADERS_EACH_BATCH_SIZE,
        "recipe",
        "A different batch size changes the optimisation itself (and which kernels run).",
        cite.BATCH_SIZE,
        prior=3,
        priority=30,
    ),
    declared_rule(
        DATA_DECLARED_BATCH_SIZE,
        "A different batch size changes the optimisation itself (and which kernels run).",
        cite.BATCH_SIZE,
        prior=3,
        priority=40,
    ),
    Rule(
        DATA_DECLARED_EPOCHS,
        "recipe",
        "A different number of epochs trains for a different number of steps.",
        cite.KERAS_FIT,
        prior=3,
        priority=45,
    ),
    Rule(
        DATA_LOADERS_EACH_NUM_WORKERS,
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
        DATA_DECLARED_NUM_WORKERS,
        "Random numbers drawn inside DataLoader workers (augmentation) come from per-worker "
        "seeds, so a different worker count gives different random draws, unless the dataset "
        "declares draws_random=False.",
        cite.NUM_WORKERS,
        prior=3,
        condition=cond.num_workers,
        priority=120,
    ),
    Rule(
        DATA_LOADERS_EACH_GENERATOR,
        "randomness",
        "The DataLoader generator drives shuffling and worker seeds; without a seeded one they "
        "come from the global RNG.",
        cite.LOADER,
        prior=2,
        priority=130,
    ),
    Rule(
        DATA_LOADERS_EACH_WORKER_INIT_FN,
        "randomness",
        "A different worker_init_fn seeds the workers' random streams differently.",
        cite.LOADER,
        prior=2,
        priority=140,
    ),
    Rule(
        DATA_LOADERS_EACH_PERSISTENT_WORKERS,
        "randomness",
        "Persistent workers keep their random state across epochs instead of reseeding.",
        cite.LOADER,
        prior=1,
        priority=150,
    ),
    Rule(
        DATA_LOADERS_EACH_IN_ORDER,
        "randomness",
        "Out-of-order batch delivery changes which batch comes when.",
        cite.LOADER,
        prior=1,
        priority=160,
    ),
    Rule(
        DATA_LOADERS_EACH_SHUFFLE,
        "randomness",
        "Shuffling on or off changes the data order.",
        cite.LOADER,
        prior=2,
        priority=170,
    ),
    Rule(
        DATA_LOADERS_EACH_SAMPLER,
        "randomness",
        "A different sampler changes the data order.",
        cite.LOADER,
        prior=2,
        priority=180,
    ),
    Rule(
        DATA_LOADERS_EACH_DROP_LAST,
        "recipe",
        "Dropping or keeping the last short batch changes the updates made.",
        cite.BATCH_SIZE,
        prior=1,
        priority=190,
    ),
    Rule(
        DATA_LOADERS_EACH_DATASET,
        "recipe",
        "The runs trained on different data.",
        cite.DATASET,
        prior=3,
        priority=200,
    ),
    Rule(
        DATA_LOADERS_EACH_DATASET_DRAWS_RANDOM,
        "recipe",
        "One run's data loading draws random numbers (augmentation) and the other's does not.",
        cite.DATASET,
        prior=3,
        condition=cond.draws_random,
        priority=210,
    ),
    Rule(
        DATA_LOADERS_EACH_COLLATE_FN,
        "recipe",
        "A different collate_fn assembles the batches differently.",
        cite.DATASET,
        prior=2,
        priority=220,
    ),
    Rule(
        DATA_LOADERS_EACH_PIN_MEMORY,
        "none",
        "Pinned memory only speeds up host-to-GPU copies.",
        cite.NOT_ARITHMETIC,
        priority=230,
    ),
    Rule(
        DATA_LOADERS_EACH_PREFETCH_FACTOR,
        "none",
        "How many batches are prefetched does not change their content or order.",
        cite.NOT_ARITHMETIC,
        priority=240,
    ),
    declared_rule(
        DATA_CAPTURED_AT_STAGE,
        "When the data section was read.",
        cite.NOT_ARITHMETIC,
        priority=250,
    ),
)
