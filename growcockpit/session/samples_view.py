"""Which evaluation's samples the Samples tab shows, and the words around them.

Plain Python, so the stepping and the empty state are tested without Textual. The view
follows the latest evaluation until the user steps back; it then holds that evaluation
(by step, so new evaluations arriving do not move it) until the user steps to the latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from growcockpit.protocol.samples_event import Samples

HOW_TO_TURN_ON = (
    "Samples are off in this run's plan. To see what the model writes as it learns, add\n\n"
    "  [metrics]\n  eval_every_steps = 100\n\n  [samples]\n  every_evals = 1\n\n"
    "to the plan (prompts, max_new_tokens, temperature, top_k, seed: docs/plans.md) "
    "and start a run: each evaluation then continues a few fixed prompts (GPT-2, Llama) "
    "or fills their [MASK]s (BERT)."
)


@dataclass(frozen=True)
class SamplesView:
    """`step`: the evaluation held, None to follow the latest."""

    step: int | None = None

    def index(self, history: Sequence[Samples]) -> int | None:
        """The position in `history` shown (None: nothing to show)."""
        if not history:
            return None
        if self.step is None:
            return len(history) - 1
        at = [i for i, s in enumerate(history) if s.step <= self.step]
        return at[-1] if at else 0

    def moved(self, history: Sequence[Samples], by: int) -> SamplesView:
        """`by` evaluations later (positive) or earlier; reaching the latest follows it."""
        here = self.index(history)
        if here is None:
            return self
        there = max(0, min(len(history) - 1, here + by))
        return SamplesView(None if there == len(history) - 1 else history[there].step)

    def first(self, history: Sequence[Samples]) -> SamplesView:
        if len(history) <= 1:
            return SamplesView()
        return SamplesView(history[0].step)


def decoding_text(ev: Samples) -> str:
    """How the text was drawn, in words."""
    if ev.kind == "masked":
        return "the likeliest tokens for each [MASK]"
    if ev.temperature <= 0:
        return "greedy"
    return f"sampled at temperature {ev.temperature:g}, seed {ev.seed}"


def position_text(index: int, total: int, following: bool) -> str:
    where = f"evaluation {index + 1} of {total}"
    return where + (" (the latest)" if following and index == total - 1 else "")


TRACKED = (
    "No samples in a tracked run ({trainer}): samples are what growcockpit's own engine "
    "writes at its evaluations. Your script's output is in the Console tab (6), and its "
    "evaluations reach the plots with cockpit.eval(val_loss=...) or "
    'cockpit.log({{"val/loss": ...}}) (docs/track.md). To see the model write as it '
    "learns, train a plan with `growcockpit train` ([samples] in the plan: docs/plans.md)."
)


def empty_text(plan: dict[str, Any], trainer: str = "") -> str:
    """What the tab says before any samples: how to turn them on, or when they come.
    `trainer`: a tracked run's loop (it has no plan file to edit)."""
    if trainer:
        return TRACKED.format(trainer=trainer)
    samples = plan.get("samples") if isinstance(plan.get("samples"), dict) else {}
    metrics = plan.get("metrics") if isinstance(plan.get("metrics"), dict) else {}
    every = samples.get("every_evals", 0) if isinstance(samples, dict) else 0
    eval_every = metrics.get("eval_every_steps", 0) if isinstance(metrics, dict) else 0
    if not (isinstance(every, int) and every > 0 and isinstance(eval_every, int)) or (
        eval_every <= 0
    ):
        return HOW_TO_TURN_ON
    first = every * eval_every
    return f"No samples yet: they come every {every} evaluation(s), the first at step {first}."
