"""The stage list the cockpit shows, decoded from a plan with the plan package.

Plans reach the cockpit in `run_started` and `plan_changed` events (as
`plan_to_dict` wrote them) or as the run's plan.toml; all go through
`plan_from_dict`, so the cockpit shows the stages with the same defaults the
backend runs, never a guess of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from growcockpit.plan import Plan, PlanError, plan_from_dict
from growcockpit.plan.operators import OPERATORS

# what the stage list says each operator does, from the plan's one operator table
ACTIONS: dict[str, str] = {name: spec.action for name, spec in OPERATORS.items()}


@dataclass
class StageInfo:
    index: int
    name: str
    layers: int
    steps: int
    enter: str = "continue"
    train: str = "all"
    advance: str = "auto"

    def describe(self) -> str:
        verb = ACTIONS.get(self.enter, self.enter)
        return f"{verb} to {self.layers} layers, train {self.train}, {self.steps} steps"


def stages_of(plan: Plan) -> list[StageInfo]:
    return [
        StageInfo(i, s.name, s.layers, s.steps, s.enter, s.train, s.advance)
        for i, s in enumerate(plan.stages)
    ]


def decode_plan(data: dict[str, Any], source: str) -> tuple[Plan | None, str]:
    """(plan, "") or (None, why it cannot be read), for a plan that arrived in an event."""
    if not data:
        return None, ""
    try:
        return plan_from_dict(data, source=source, validate=False), ""
    except PlanError as exc:
        return None, str(exc)
