"""The `samples` event: what the model wrote at an evaluation (a plan's `[samples]`).

Apart from events.py, which holds the training loop's measurements; a reader that
predates it decodes a `samples` line to `UnknownEvent` and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, get_args

from .events import Event

SampleKind = Literal["causal", "masked"]
SAMPLE_KINDS: tuple[str, ...] = get_args(SampleKind)


@dataclass(kw_only=True)
class SampleText:
    """One prompt and the model's text for it. A causal LM's `text` is its continuation
    (the prompt not repeated); a masked LM's is the prompt with each [MASK] filled by its
    most likely token, and `top_tokens[i]` / `top_probs[i]` are the most likely tokens of
    the i-th [MASK] and their probabilities, best first."""

    prompt: str
    text: str = ""
    top_tokens: list[list[str]] = field(default_factory=list)
    top_probs: list[list[float]] = field(default_factory=list)


@dataclass(kw_only=True)
class Samples(Event):
    """At the evaluation of `step` (in stage `stage`): one `SampleText` per prompt.
    `temperature` 0 means greedy decoding; `seed` seeds sampling at every evaluation."""

    TYPE: ClassVar[str] = "samples"
    step: int = 0
    stage: int = 0
    kind: str = "causal"  # a SampleKind
    temperature: float = 0.0
    seed: int = 0
    samples: list[SampleText] = field(default_factory=list)
