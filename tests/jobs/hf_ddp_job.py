"""torchrun target: a real Hugging Face ``Trainer`` run on 2 CPU ranks (gloo, 2 steps, a tiny
BERT built from its config: nothing downloaded) with ``report_to=["mlflow"]`` and
``FingerprintTrainerCallback``. accelerate finds torchrun's variables and initialises the group.
Each rank writes what its callback saw to ``<out>/rank-<i>.json``."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from mlflow_fingerprint.integrations import FingerprintTrainerCallback


class Rows(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> dict[str, torch.Tensor | int]:
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 32, (8,), generator=g), "labels": i % 2}


def tiny_bert() -> BertForSequenceClassification:
    """A two-class BERT small enough to train in a second, built from its config (no download);
    the single-process test in test_integrations.py trains it too."""
    config = BertConfig(
        vocab_size=32,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    training = TrainingArguments(
        output_dir=str(args.out / "trainer"),
        per_device_train_batch_size=4,
        max_steps=2,
        seed=11,
        report_to=["mlflow"],
        save_strategy="no",
        use_cpu=True,
        ddp_backend="gloo",
        disable_tqdm=True,
    )
    callback = FingerprintTrainerCallback()
    trainer = Trainer(
        model=tiny_bert(),
        args=training,
        train_dataset=Rows(),
        callbacks=[callback],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    fp = callback.fingerprint
    seen = {
        "rank": training.process_index,
        "world_size": training.world_size,
        "run_id": callback.run_id,
        "ranks": len((fp.get("distributed.ranks") if fp is not None else None) or []),
        "warnings": sorted({type(w.message).__name__ for w in caught}),
    }
    (args.out / f"rank-{training.process_index}.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    main()
