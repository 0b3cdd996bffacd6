"""`race --control`: the winner's trainable set without the growth.

LLaMA-Pro#9 asks of every growth-then-freeze recipe: is the gain the growth, or only
the smaller set of weights being trained? The control answers it inside the race: the
final model built at full depth from the start, training for the whole budget exactly
the layers (and embeddings/head toggles) that the growth plan trains in its last growth
stage, at the same compute. If the growth plan beats the control, growing paid; if not,
the reduced trainable set did the work.

A control is derived from each growth candidate, before the race (the winner is not
known yet), and races like any candidate; controls that come out the same plan are one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from growcockpit.plan import Plan, estimate_cost, plan_from_dict, resolve_shapes
from growcockpit.plan.operators import changes_model

CONTROL_STAGE = "control"


class ControlError(Exception):
    """A growth plan whose control cannot be built: one line, why and what to do."""


@dataclass(frozen=True)
class TrainableSet:
    """What a stage trains: layer indices at its depth, and the embeddings/head toggles."""

    layers: int
    ids: tuple[int, ...]
    embeddings: bool
    head: bool

    @property
    def policy(self) -> str:
        """The `train` value that trains exactly `ids` at depth `layers`."""
        n, ids = self.layers, list(self.ids)
        if ids == list(range(n)):
            return "all"
        if not ids:
            return "none"
        if ids == list(range(n - len(ids), n)):
            return f"top:{len(ids)}"
        return "layers:" + ",".join(map(str, ids))


def last_growth_set(plan: Plan) -> TrainableSet | None:
    """The trainable set of the plan's last stage whose operator grows the model, or None
    for a plan that never grows (a baseline has no control)."""
    shapes = resolve_shapes(plan)
    grown = [i for i, s in enumerate(plan.stages) if i > 0 and changes_model(s.enter)]
    if not grown:
        return None
    i = grown[-1]
    stage, shape = plan.stages[i], shapes[i]
    if shape.layers != plan.model.final_layers or shape.width != plan.model.hidden_size:
        raise ControlError(
            f"--control: {plan.name}'s last growth stage ({stage.name}) trains at "
            f"{shape.layers} layers × width {shape.width}, not the final model's "
            f"{plan.model.final_layers} × {plan.model.hidden_size}; a control trains the "
            "final model, so race without --control"
        )
    return TrainableSet(
        shape.layers,
        tuple(sorted(shape.trainable_layers)),
        stage.embeddings_trainable(),
        stage.head_trainable(),
    )


def control_tables(data: dict[str, Any], plan: Plan) -> dict[str, Any] | None:
    """`plan`'s control as plan tables (`data`: the plan's tables with the race's choices
    applied), or None when its last growth stage trains everything (the control would be
    the full-depth baseline, which races already)."""
    trained = last_growth_set(plan)
    if trained is None:
        return None
    if trained.policy == "all" and trained.embeddings and trained.head:
        return None
    out = {k: v for k, v in data.items() if k != "stages"}
    out["name"] = f"{plan.name}-{CONTROL_STAGE}"
    stage: dict[str, Any] = {
        "name": CONTROL_STAGE,
        "layers": plan.model.final_layers,
        "enter": "init",
        "train": trained.policy,
        "embeddings": "train" if trained.embeddings else "frozen",
        "head": "train" if trained.head else "frozen",
    }
    if plan.budget is not None:
        stage["fill"] = True
    else:  # as many steps as cost what the growth plan costs
        one = plan_from_dict({**out, "stages": [{**stage, "steps": 1}]})
        step = estimate_cost(one).total
        stage["steps"] = max(1, round(estimate_cost(plan).total / step)) if step > 0 else 1
    out["stages"] = [stage]
    return out
