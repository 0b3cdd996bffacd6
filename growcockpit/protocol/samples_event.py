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


def percent(p: float) -> str:
    """A token's probability as a person reads it: 42%, 3.0%, 0.4%, <0.1%."""
    if p >= 0.095:
        return f"{100 * p:.0f}%"
    return f"{100 * p:.1f}%" if p >= 0.001 else "<0.1%"


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

    def one_line(self, kind: str) -> str:
        """The sample on one line, as a console prints it: a causal LM's prompt and
        continuation, a masked LM's filled text and its guesses (whitespace collapsed, not
        yet terminal-safe)."""
        if kind != "masked":
            return " ".join(f"{self.prompt} ▸{self.text}".split())
        rows = zip(self.top_tokens, self.top_probs, strict=False)
        guesses = "; ".join(
            ", ".join(f"{t} {percent(p)}" for t, p in zip(ts, ps, strict=False)) for ts, ps in rows
        )
        return " ".join(f"{self.text} ({guesses})".split())


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
