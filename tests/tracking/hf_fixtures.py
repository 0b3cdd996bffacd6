"""A tiny Hugging Face Trainer run for the tracking tests: GPT-2, random tokens, CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tiny_models import VOCAB, tiny_gpt2
from transformers import Trainer, TrainerCallback, TrainingArguments


class RandomTokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __init__(self, n: int = 64, length: int = 16, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, VOCAB, (n, length), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_trainer(
    out: Path, callbacks: list[TrainerCallback], max_steps: int, layers: int = 2, **args: Any
) -> Trainer:
    options: dict[str, Any] = {
        "output_dir": str(out),
        "max_steps": max_steps,
        "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 4,
        "learning_rate": 1e-3,
        "lr_scheduler_type": "linear",
        "warmup_steps": 0,
        "logging_steps": 1000,
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        **args,
    }
    return Trainer(
        model=tiny_gpt2(layers),
        args=TrainingArguments(**options),
        train_dataset=RandomTokens(),
        eval_dataset=RandomTokens(8, seed=1),
        callbacks=callbacks,
    )
