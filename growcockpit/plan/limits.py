"""Upper bounds on sizes, and short echoes of bad values.

Without a ceiling, `max_seq_len = 9223372036854775807` or `batch_size =
10**18` validate and only fail deep inside torch (or exhaust memory). The
ceilings are far above any model this tool trains (BERT-Large: hidden 1024,
24 layers, 512 positions), so they only catch typos and hostile files.
Values echoed into an error line are cut, so a 100 KB value cannot make a
100 KB error.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from growcockpit.plan.names import describe_char
from growcockpit.plan.types import Plan

MAX_ECHO = 60

# key path -> the largest value accepted
CEILINGS: dict[str, int] = {
    "model.hidden_size": 65_536,
    "model.num_heads": 1_024,
    "model.intermediate_size": 262_144,
    "model.max_seq_len": 1_048_576,
    "model.final_layers": 1_024,
    "optim.batch_size": 1_048_576,
    "optim.grad_accum_steps": 65_536,
    "optim.warmup_steps": 10**12,
    "metrics.every_steps": 10**12,
    "metrics.timing_every_steps": 10**12,
    "metrics.eval_every_steps": 10**12,
    "metrics.eval_batches": 1_000_000,
    "checkpoint.every_steps": 10**12,
    "checkpoint.keep": 1_000_000,
}
STAGE_CEILINGS: dict[str, int] = {"layers": 1_024, "width": 65_536, "steps": 10**12}
MAX_STAGE_NAME = 64


def echo(value: Any) -> str:
    """`repr(value)`, cut to MAX_ECHO characters with the length said."""
    text = repr(value)
    if len(text) <= MAX_ECHO:
        return text
    return f"{text[: MAX_ECHO - 20]}… ({len(text)} characters)"


def quoted(value: str) -> str:
    """`"value"` when short and printable; otherwise its cut, escaped `echo`."""
    if value.isprintable() and len(value) <= MAX_ECHO:
        return f'"{value}"'
    return echo(value)


def _too_big(key: str, value: object, ceiling: int) -> tuple[str, str] | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > ceiling:
        return key, f"must be ≤ {ceiling:,}, got {echo(value)}; set a smaller value"
    return None


def _stage_name_problem(name: str) -> str | None:
    if len(name) > MAX_STAGE_NAME:
        return f"is {len(name)} characters long; use at most {MAX_STAGE_NAME}"
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return (
                f"contains {describe_char(ch)}, which would act on the terminal; "
                "use letters, digits, spaces and punctuation"
            )
    return None


def limit_problems(plan: Plan) -> list[tuple[str, str]]:
    """(key, problem) for every size above its ceiling and every unprintable stage name."""
    out: list[tuple[str, str]] = []
    for key, ceiling in CEILINGS.items():
        section, field = key.split(".")
        found = _too_big(key, getattr(getattr(plan, section), field), ceiling)
        if found:
            out.append(found)
    for i, stage in enumerate(plan.stages):
        for field, ceiling in STAGE_CEILINGS.items():
            found = _too_big(f"stages[{i}].{field}", getattr(stage, field), ceiling)
            if found:
                out.append(found)
        problem = _stage_name_problem(stage.name)
        if problem:
            out.append((f"stages[{i}].name", problem))
    return out
