"""The model shape each stage trains at, and the problems of the shape chain.

Each operator's shape rule lives in the operator table (`plan/operators.py`);
this module walks the stages through it, keeping the open level snapshots
(the inputs of `coalesce` stages that a later `decoalesce`/`interpolate`
returns to). The backend takes its level snapshots from this walk
(`StageShape.level`, `StageShape.open_levels`), so the V-cycle level stack is
written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from growcockpit.plan.operators import OPERATORS
from growcockpit.plan.shape_rules import Level, Shape, ShapeInput, ShapeStep, asked_shape
from growcockpit.plan.types import Plan, trainable_layer_ids


@dataclass
class StageShape:
    """Shape of the model while stage `index` trains.

    `level`: for a coalesce, its own index (it opens that level); for a
    decoalesce/interpolate, the index of the coalesce stage whose snapshot it
    returns to; else None. `open_levels`: the coalesce stages whose snapshots
    are still open after this stage's operator, oldest first.
    """

    index: int
    layers: int
    width: int
    heads: int
    intermediate: int
    prev_layers: int
    prev_width: int
    added_layers: int
    trainable_layers: list[int] = field(default_factory=list)
    level: int | None = None
    open_levels: tuple[int, ...] = ()


Problem = tuple[str, str]  # (key path, problem)


def _trainable(plan: Plan, index: int, prev_layers: int) -> list[int]:
    stage = plan.stages[index]
    try:
        return trainable_layer_ids(stage, prev_layers)
    except ValueError:
        return []


def walk_shapes(plan: Plan) -> tuple[list[StageShape], list[Problem]]:
    """Shapes of every stage (best effort) and the shape-chain problems.

    Problems cover the operators only (first stage init, continue/stack/
    coalesce/decoalesce/interpolate arithmetic, final shape); field-level
    checks are in `validate`. After a problem the walk goes on with the
    shape the stage asked for, so later stages are still checked.
    """
    model = plan.model
    hidden = model.hidden_size
    shapes: list[StageShape] = []
    problems: list[Problem] = []
    levels: list[Level] = []
    shape = Shape(0, hidden, model.num_heads, model.intermediate_size)

    for index, stage in enumerate(plan.stages):
        prev = shape
        op = stage.enter
        if index == 0 and op != "init":
            problems.append(
                (
                    f"stages[{index}].enter",
                    f'the first stage must build the model, got "{op}"; use enter = "init" (or leave enter out)',
                )
            )
        x = ShapeInput(index, stage, prev, model, tuple(levels))
        spec = OPERATORS.get(op)
        step = (
            spec.rule(x) if spec is not None else ShapeStep(asked_shape(x))
        )  # unknown: validate says so
        problems += step.problems
        level: int | None = None
        if step.opens is not None:
            levels.append(step.opens)
            level = step.opens.stage
        if step.returns_to is not None:
            level = levels[step.returns_to].stage
            del levels[step.returns_to :]
        shape = step.shape
        shapes.append(
            StageShape(
                index=index,
                layers=shape.layers,
                width=shape.width,
                heads=shape.heads,
                intermediate=shape.intermediate,
                prev_layers=prev.layers,
                prev_width=prev.width,
                added_layers=max(0, shape.layers - prev.layers),
                trainable_layers=_trainable(plan, index, prev.layers),
                level=level,
                open_levels=tuple(lv.stage for lv in levels),
            )
        )

    if shapes:
        last = shapes[-1]
        key = f"stages[{last.index}]"
        if last.layers != model.final_layers:
            problems.append(
                (
                    f"{key}.layers",
                    f"the last stage must end at model.final_layers = {model.final_layers}, but has {last.layers} layers; "
                    f"set layers = {model.final_layers} here (add a stage), or change model.final_layers",
                )
            )
        if last.width != hidden:
            problems.append(
                (
                    f"{key}.width",
                    f"the last stage must train at full width model.hidden_size = {hidden}, but is {last.width} wide; "
                    'add a final enter = "decoalesce" or "interpolate" stage back to full width',
                )
            )
    return shapes, problems


def resolve_shapes(plan: Plan) -> list[StageShape]:
    """The model shape each stage trains at (see the module doc for rules).

    Best effort: an invalid plan still gets a shape per stage (the one each
    stage asks for), so the cockpit can show and cost a plan being edited.
    Call `validate_plan` for guarantees.
    """
    return walk_shapes(plan)[0]
