"""`[samples]`: which evaluations write text, from which prompts, and the checks of its keys.

Stdlib only, so `plan validate`, the designer and the backend agree on the default
prompts and on when samples are due. The defaults suit the builtin Shakespeare
corpus and read as plain English on any other.
"""

from __future__ import annotations

import math

from growcockpit.plan.families import FAMILIES, Objective, family_facts
from growcockpit.plan.types import Plan, SamplesSpec

MASK = "[MASK]"  # where a masked-LM prompt asks for a token (the tokenizer's mask token)
DEFAULT_PROMPTS: dict[Objective, tuple[str, ...]] = {
    "causal": ("To be, or not to be", "The king", "My lord, I"),
    "masked": (
        "To be, or not to [MASK].",
        "The [MASK] is dead.",
        "My good [MASK], I pray you.",
    ),
}
MAX_PROMPTS = 8
MAX_PROMPT_CHARS = 200
MAX_NEW_TOKENS = 256
MAX_MASK_PREDICTIONS = 20

Problem = tuple[str, str]


def objective_of(family: str) -> Objective:
    """The family's objective; "causal" for a name not registered (validation says so)."""
    return family_facts(family).objective if family in FAMILIES else "causal"


def prompts_of(plan: Plan) -> list[str]:
    """The prompts a run samples from: the plan's, else its family's defaults."""
    given = plan.samples.prompts
    return list(given) if given else list(DEFAULT_PROMPTS[objective_of(plan.model.family)])


def samples_due(spec: SamplesSpec, eval_every_steps: int, step: int, final: bool) -> bool:
    """Whether the evaluation at `step` writes samples: every `every_evals`th periodic one
    (counted by step, so a resumed or rolled-back run keeps the same cadence) and the run's
    final evaluation, whatever its step."""
    if spec.every_evals <= 0 or eval_every_steps <= 0:
        return False
    if final:
        return True
    return step % eval_every_steps == 0 and (step // eval_every_steps) % spec.every_evals == 0


def _prompt_problems(spec: SamplesSpec, objective: Objective) -> list[Problem]:
    key = "samples.prompts"
    if len(spec.prompts) > MAX_PROMPTS:
        return [(key, f"{len(spec.prompts)} prompts; keep at most {MAX_PROMPTS}")]
    for i, prompt in enumerate(spec.prompts):
        where = f"{key}[{i}]"
        if not isinstance(prompt, str):
            return [(where, 'is not a string; write each prompt in quotes: ["To be", ...]')]
        if not prompt.strip():
            return [(where, "is empty; write some text, or remove it")]
        if len(prompt) > MAX_PROMPT_CHARS:
            return [(where, f"has {len(prompt)} characters; keep at most {MAX_PROMPT_CHARS}")]
        if objective == "masked" and MASK not in prompt:
            return [(where, f'has no {MASK}; a masked LM fills {MASK}, e.g. "The [MASK] is dead."')]
    return []


def samples_problems(plan: Plan) -> list[Problem]:
    """(key, problem) for every `[samples]` key out of range, in key order."""
    spec = plan.samples
    out: list[Problem] = []

    def whole(key: str, value: int, low: int, high: int, hint: str) -> None:
        if not low <= value <= high:
            out.append((f"samples.{key}", f"must be in {low} … {high}, got {value}; {hint}"))

    whole("every_evals", spec.every_evals, 0, 1_000_000, "0 (off) or N: every Nth evaluation")
    if spec.every_evals > 0 and plan.metrics.eval_every_steps <= 0:
        out.append(
            (
                "samples.every_evals",
                "samples come with evaluations, which are off; set metrics.eval_every_steps",
            )
        )
    out += _prompt_problems(spec, objective_of(plan.model.family))
    whole("max_new_tokens", spec.max_new_tokens, 1, MAX_NEW_TOKENS, "e.g. 24")
    if not (math.isfinite(spec.temperature) and 0.0 <= spec.temperature <= 10.0):
        out.append(
            (
                "samples.temperature",
                f"must be in 0 … 10, got {spec.temperature}; 0 is greedy, e.g. 0.8 samples",
            )
        )
    whole("top_k", spec.top_k, 0, 1 << 20, "0 (all tokens) or e.g. 40")
    whole("mask_predictions", spec.mask_predictions, 1, MAX_MASK_PREDICTIONS, "e.g. 5")
    whole("seed", spec.seed, 0, (1 << 63) - 1, "a non-negative integer")
    return out
