"""Validation of how a stage ends: `advance` and the plateau trigger's options.

`advance = "plateau"` needs `patience` (steps in the trigger's window, ≥ 1)
and takes `min_delta` (the EMA loss drop per 1M tokens below which the stage
ends; default 0: when the loss stops falling). Both belong to plateau only.
"""

from __future__ import annotations

import math

from growcockpit.plan.types import Plan

Problem = tuple[str, str]

DEFAULT_MIN_DELTA = 0.0


def advance_problems(plan: Plan) -> list[Problem]:
    problems: list[Problem] = []
    for index, stage in enumerate(plan.stages):
        key = f"stages[{index}]"
        if stage.advance != "plateau":
            for option, value in (("patience", stage.patience), ("min_delta", stage.min_delta)):
                if value is not None:
                    problems.append(
                        (
                            f"{key}.{option}",
                            f'only applies to advance = "plateau", not "{stage.advance}"; '
                            f'remove {option}, or set advance = "plateau"',
                        )
                    )
            continue
        if stage.patience is None:
            problems.append(
                (
                    f"{key}.advance",
                    '"plateau" needs patience = <steps> (the window over which the loss must keep '
                    "falling); add e.g. patience = 50",
                )
            )
        elif stage.patience < 1:
            problems.append(
                (
                    f"{key}.patience",
                    f"must be ≥ 1, got {stage.patience}; set the window in steps, e.g. 50",
                )
            )
        elif stage.patience >= stage.steps:
            problems.append(
                (
                    f"{key}.patience",
                    f"the window ({stage.patience} steps) must be shorter than the stage's "
                    f"{stage.steps} steps (its upper bound), or the trigger can never fire; "
                    f"set patience < {stage.steps} or raise steps",
                )
            )
        if stage.min_delta is not None and not (
            stage.min_delta >= 0 and math.isfinite(stage.min_delta)
        ):
            problems.append(
                (
                    f"{key}.min_delta",
                    f"must be ≥ 0, got {stage.min_delta}; set the loss drop per 1M tokens "
                    "below which the stage ends, e.g. 0.05",
                )
            )
    return problems


def min_delta_of(min_delta: float | None) -> float:
    return DEFAULT_MIN_DELTA if min_delta is None else min_delta
