"""Built-in synthetic tasks as a data source (`data.source = "task:hops"`), plan side.

A task source needs no corpus and no tokenizer training: its sequences are generated
from the plan's seed and its vocabulary is fixed (the alphabet plus the family's
end-of-text token). This module knows the names and the plan checks; the generator
lives in backend/data/hops.py (torch).
"""

from __future__ import annotations

from growcockpit.plan.families import FAMILIES, family_facts
from growcockpit.plan.types import DataSpec

TASK_PREFIX = "task:"
TASKS = ("hops",)
FIXED_TOKENIZER = "fixed"  # what a task plan may write for data.tokenizer (the default is ignored)
MAX_ALPHABET = 64
MAX_HOPS = 64
Problem = tuple[str, str]


def is_task_source(source: str) -> bool:
    """`data.source` names a built-in generated task rather than text."""
    return source.strip().startswith(TASK_PREFIX)


def task_name(source: str) -> str:
    return source.strip()[len(TASK_PREFIX) :]


def task_vocab_size(spec: DataSpec) -> int:
    """The fixed vocabulary: one token per alphabet symbol plus end-of-text."""
    return spec.alphabet + 1


def task_problems(spec: DataSpec, family: str) -> list[Problem]:
    """One-line problems of a task source (its keys, its family, its tokenizer)."""
    name = task_name(spec.source)
    if name not in TASKS:
        choices = ", ".join(f'"{TASK_PREFIX}{t}"' for t in TASKS)
        return [("data.source", f"unknown task {name!r}; use {choices}")]
    out: list[Problem] = []
    known = family in FAMILIES
    if known and family_facts(family).objective != "causal":
        out.append(
            (
                "data.source",
                f'"{spec.source}" is a causal task (each position is predicted from the ones '
                f'before it); {family} is a masked LM: use family = "gpt2" or "llama"',
            )
        )
    if spec.tokenizer not in (DataSpec().tokenizer, FIXED_TOKENIZER):
        out.append(
            (
                "data.tokenizer",
                f'"{spec.source}" has a fixed vocabulary (the alphabet + end-of-text); '
                f'write tokenizer = "{FIXED_TOKENIZER}" or remove the key',
            )
        )
    if not 2 <= spec.alphabet <= MAX_ALPHABET:
        out.append(("data.alphabet", f"{spec.alphabet} symbols; use 2 to {MAX_ALPHABET}"))
    if not 1 <= spec.hops <= MAX_HOPS:
        out.append(("data.hops", f"{spec.hops} hops; use 1 to {MAX_HOPS}"))
    if spec.seq_len < 3:
        out.append(("data.seq_len", f"{spec.seq_len} tokens is too short for a task; use ≥ 3"))
    return out


__all__ = [
    "FIXED_TOKENIZER",
    "TASKS",
    "TASK_PREFIX",
    "is_task_source",
    "task_name",
    "task_problems",
    "task_vocab_size",
]
