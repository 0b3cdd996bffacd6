"""Validation of a family's own `[model]` keys (plan/families.py `model_keys`).

Kept apart from `validate` so each family's rules read as one place: a key
another family owns is refused (not silently ignored), grouped-query heads
must divide the query heads, and width-changing operators are held to what
the family's tensor rules can map.
"""

from __future__ import annotations

import math

from growcockpit.plan.families import FAMILY_FACTS, FAMILY_MODEL_KEYS
from growcockpit.plan.limits import echo
from growcockpit.plan.types import Plan

Problem = tuple[str, str]


def model_key_problems(plan: Plan) -> list[Problem]:
    m = plan.model
    facts = FAMILY_FACTS.get(m.family)
    if facts is None:  # model.family's own error
        return []
    problems: list[Problem] = []
    for key, owners in FAMILY_MODEL_KEYS.items():
        if getattr(m, key) is not None and key not in facts.model_keys:
            problems.append(
                (
                    f"model.{key}",
                    f"only applies to family = {' or '.join(echo(o) for o in owners)}, not "
                    f'"{m.family}"; remove it',
                )
            )
    if m.num_kv_heads is not None and "num_kv_heads" in facts.model_keys:
        kv = m.num_kv_heads
        if kv < 1:
            problems.append(("model.num_kv_heads", f"must be a positive integer, got {kv}"))
        elif m.num_heads >= 1 and m.num_heads % kv:
            divisors = [d for d in range(1, m.num_heads + 1) if m.num_heads % d == 0]
            problems.append(
                (
                    "model.num_kv_heads",
                    f"{kv} does not divide num_heads = {m.num_heads} (each key/value head "
                    f"serves a group of query heads); use one of {', '.join(map(str, divisors))}",
                )
            )
    if m.rope_theta is not None and not (math.isfinite(m.rope_theta) and m.rope_theta > 1.0):
        problems.append(
            ("model.rope_theta", f"must be a finite number above 1, got {m.rope_theta}; e.g. 10000")
        )
    if m.rms_norm_eps is not None and not (0.0 < m.rms_norm_eps < 1.0):
        problems.append(
            ("model.rms_norm_eps", f"must be in (0, 1), got {m.rms_norm_eps}; e.g. 1e-6")
        )
    problems += _width_problems(plan)
    return problems


def _width_problems(plan: Plan) -> list[Problem]:
    """Width coalescing pairs query head i with i + n_h/2 and kv head j with j + n_kv/2,
    so a query head's kv group maps onto the coalesced kv head; an untied head is
    what the Llama width rules map (a tied one would need its norm rescaled)."""
    m = plan.model
    facts = FAMILY_FACTS[m.family]
    if "num_kv_heads" not in facts.model_keys:
        return []
    problems: list[Problem] = []
    narrow = [
        i for i, s in enumerate(plan.stages) if s.width is not None and s.width != m.hidden_size
    ]
    for i in narrow[:1]:  # the first narrower stage: the plan changes width
        stage = plan.stages[i]
        if m.family_value("tie_embeddings"):
            problems.append(
                (
                    f"stages[{i}].enter",
                    f'"{stage.enter}" changes the width, which a {m.family} model with tied '
                    "embeddings cannot keep function-preserving; set model.tie_embeddings = false "
                    "or keep the width",
                )
            )
        elif m.kv_heads % 2:
            problems.append(
                (
                    f"stages[{i}].enter",
                    f'"{stage.enter}" halves the key/value heads too, but num_kv_heads = '
                    f"{m.kv_heads} is odd; use an even num_kv_heads or keep the width",
                )
            )
    return problems
