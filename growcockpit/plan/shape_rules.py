"""The shape rules of the stage operators: what each does to depth and width.

The operator table (`operators.OPERATORS`) names one of these per operator; the
shape walk (`shapes.walk_shapes`) calls them stage by stage.

Shape rules, each `ShapeInput → ShapeStep`:

- ``init``: builds the model at `layers`, full width (model.hidden_size).
- ``continue``: keeps the shape.
- ``stack``: adds layers on top (or in the middle); width unchanged.
- ``coalesce``: halves width (hidden, heads and FFN together; `width`
  defaults to half the previous width, or give the previous width for a
  depth-only coalesce) and/or depth (`layers` = previous // 2 halves depth,
  `layers` = previous keeps it). Its input shape opens a level snapshot: the
  level-k model taken just before coalescing.
- ``decoalesce`` / ``interpolate``: double width and/or depth back to the
  shape of an open level (`width` defaults to the most recent level's width);
  ``interpolate`` also mixes in that level's weights with `alpha`. Returning
  to a level closes it and every level opened after it. The stage's `pairing`
  must be its level's (the coalesce's): the weights were paired that way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from growcockpit.plan.types import ModelSpec, Stage

Problem = tuple[str, str]  # (key path, problem)


@dataclass(frozen=True)
class Shape:
    layers: int
    width: int
    heads: int
    intermediate: int


@dataclass(frozen=True)
class Level:
    """An open level snapshot: the model as it entered coalesce stage `stage`."""

    stage: int
    shape: Shape
    pairing: str


@dataclass(frozen=True)
class ShapeInput:
    index: int
    stage: Stage
    prev: Shape
    model: ModelSpec
    levels: tuple[Level, ...]  # open, oldest first

    @property
    def key(self) -> str:
        return f"stages[{self.index}]"


@dataclass
class ShapeStep:
    """A rule's answer: the new shape, its problems, and the level it opens or returns to."""

    shape: Shape
    problems: list[Problem] = field(default_factory=list)
    opens: Level | None = None
    returns_to: int | None = None  # position in `levels`: closes it and every later one


ShapeRule = Callable[[ShapeInput], ShapeStep]


def _scaled(full: int, width: int, hidden: int) -> int:
    return max(1, full * width // hidden) if hidden > 0 else full


def asked_shape(x: ShapeInput) -> Shape:
    """The shape the stage asks for, heads and FFN scaled with its width (best effort)."""
    m = x.model
    width = x.stage.width if x.stage.width is not None else x.prev.width
    return Shape(
        x.stage.layers,
        width,
        _scaled(m.num_heads, width, m.hidden_size),
        _scaled(m.intermediate_size, width, m.hidden_size),
    )


def init_rule(x: ShapeInput) -> ShapeStep:
    m, stage = x.model, x.stage
    out = ShapeStep(Shape(stage.layers, m.hidden_size, m.num_heads, m.intermediate_size))
    if x.index > 0:
        out.problems.append(
            (
                f"{x.key}.enter",
                '"init" is only for the first stage (it would discard the trained model); '
                'use "continue", "stack", "coalesce", "decoalesce" or "interpolate"',
            )
        )
    if stage.width is not None and stage.width != m.hidden_size:
        out.problems.append(
            (
                f"{x.key}.width",
                f"init builds the model at model.hidden_size = {m.hidden_size}, not {stage.width}; "
                'leave width out, and train narrower in a later enter = "coalesce" stage',
            )
        )
    return out


def continue_rule(x: ShapeInput) -> ShapeStep:
    prev, new = x.prev, asked_shape(x)
    out = ShapeStep(Shape(new.layers, new.width, prev.heads, prev.intermediate))
    if new.layers != prev.layers:
        verb = "stack" if new.layers > prev.layers else "coalesce"
        out.problems.append(
            (
                f"{x.key}.layers",
                f'"continue" keeps the depth, but layers goes {prev.layers} → {new.layers}; '
                f'set layers = {prev.layers}, or use enter = "{verb}"',
            )
        )
    if new.width != prev.width:
        out.problems.append(
            (
                f"{x.key}.width",
                f'"continue" keeps the width, but width goes {prev.width} → {new.width}; '
                "leave width out, or use coalesce/decoalesce",
            )
        )
    return out


def stack_rule(x: ShapeInput) -> ShapeStep:
    prev, new, stage = x.prev, asked_shape(x), x.stage
    out = ShapeStep(Shape(new.layers, new.width, prev.heads, prev.intermediate))
    added = new.layers - prev.layers
    if added <= 0:
        out.problems.append(
            (
                f"{x.key}.layers",
                f'"stack" must add layers, but layers goes {prev.layers} → {new.layers}; '
                f'set layers > {prev.layers}, or use enter = "continue"',
            )
        )
    elif stage.source in ("bottom", "middle") and added > prev.layers:
        out.problems.append(
            (
                f"{x.key}.layers",
                f'source = "{stage.source}" copies existing layers, but {added} are added '
                f"to only {prev.layers} ({prev.layers} → {new.layers}); set layers ≤ {2 * prev.layers}, "
                'or use source = "top" or "random"',
            )
        )
    if new.width != prev.width:
        out.problems.append(
            (
                f"{x.key}.width",
                f'"stack" keeps the width, but width goes {prev.width} → {new.width}; leave width out',
            )
        )
    return out


def coalesce_rule(x: ShapeInput) -> ShapeStep:
    prev, stage, key = x.prev, x.stage, x.key
    new_layers = stage.layers
    new_width = stage.width if stage.width is not None else prev.width // 2
    heads, inter = prev.heads, prev.intermediate
    problems: list[Problem] = []
    halve_width = new_width != prev.width
    halve_depth = new_layers != prev.layers
    if halve_width and new_width * 2 != prev.width:
        problems.append(
            (
                f"{key}.width",
                f"coalescing halves the width, so {prev.width} → {prev.width // 2}, not {new_width}; "
                f"set width = {prev.width // 2} (or {prev.width} to halve depth only), or leave it out",
            )
        )
    elif halve_width:
        odd = [
            what
            for what, n in (
                ("width", prev.width),
                ("heads", prev.heads),
                ("intermediate size", prev.intermediate),
            )
            if n % 2
        ]
        if odd:
            problems.append(
                (
                    f"{key}.width",
                    f"cannot halve the width: {', '.join(odd)} odd ({prev.width} wide, {prev.heads} heads, "
                    f"FFN {prev.intermediate}); set width = {prev.width} to coalesce depth only",
                )
            )
        heads, inter = max(1, prev.heads // 2), max(1, prev.intermediate // 2)
    if halve_depth and (prev.layers % 2 or new_layers * 2 != prev.layers):
        if prev.layers % 2:
            problems.append(
                (
                    f"{key}.layers",
                    f"cannot halve an odd depth ({prev.layers}): coalescing merges pairs of layers; "
                    f"set layers = {prev.layers} to coalesce width only, or make the previous depth even",
                )
            )
        else:
            problems.append(
                (
                    f"{key}.layers",
                    f"coalescing halves the depth, so {prev.layers} → {prev.layers // 2}, not {new_layers}; "
                    f"set layers = {prev.layers // 2} (or {prev.layers} to halve width only)",
                )
            )
    if not halve_width and not halve_depth:
        problems.append(
            (
                f"{key}.enter",
                f"coalesce changes nothing ({prev.layers} layers, width {prev.width}); "
                f"set layers = {prev.layers // 2} and/or leave width out to halve it",
            )
        )
    return ShapeStep(
        Shape(new_layers, new_width, heads, inter),
        problems,
        opens=Level(x.index, prev, stage.pairing),
    )


def return_to_level_rule(x: ShapeInput) -> ShapeStep:
    """decoalesce / interpolate: back to the shape of an open level."""
    prev, stage, key, levels = x.prev, x.stage, x.key, x.levels
    op = stage.enter
    new_layers = stage.layers
    if stage.width is not None:
        new_width = stage.width
    else:
        new_width = levels[-1].shape.width if levels else min(2 * prev.width, x.model.hidden_size)
    match = next(
        (
            i
            for i in range(len(levels) - 1, -1, -1)
            if (levels[i].shape.layers, levels[i].shape.width) == (new_layers, new_width)
        ),
        None,
    )
    factor_ok = new_layers in (prev.layers, 2 * prev.layers) and new_width in (
        prev.width,
        2 * prev.width,
    )
    grows = (new_layers, new_width) != (prev.layers, prev.width)
    open_shapes = ", ".join(
        f"{lv.shape.layers} layers × width {lv.shape.width}" for lv in reversed(levels)
    )
    problems: list[Problem] = []
    if not factor_ok or not grows:
        problems.append(
            (
                f"{key}.width"
                if grows and new_layers in (prev.layers, 2 * prev.layers)
                else f"{key}.layers",
                f'"{op}" doubles depth and/or width ({prev.layers} layers × width {prev.width} → '
                f"{2 * prev.layers} and/or {2 * prev.width}), but this stage asks for {new_layers} × {new_width}; "
                + (f"return to {open_shapes}" if levels else "coalesce earlier in the plan first"),
            )
        )
    elif match is None:
        problems.append(
            (
                f"{key}.enter",
                f'"{op}" must return to a shape coalesced earlier in this plan, but nothing was coalesced '
                f"from {new_layers} layers × width {new_width}; "
                + (
                    f"set layers/width to {open_shapes}"
                    if levels
                    else 'add an enter = "coalesce" stage before it'
                ),
            )
        )
    if match is None:
        m = x.model
        scaled = Shape(
            new_layers,
            new_width,
            _scaled(m.num_heads, new_width, m.hidden_size),
            _scaled(m.intermediate_size, new_width, m.hidden_size),
        )
        return ShapeStep(scaled, problems)
    level = levels[match]
    if stage.pairing != level.pairing:
        problems.append(
            (
                f"{key}.pairing",
                f'"{stage.pairing}" differs from the pairing of the coalesce it returns to '
                f'(stages[{level.stage}]: "{level.pairing}"), whose layers and heads were paired that way; '
                f'set pairing = "{level.pairing}" (or leave it out if that is the default "adjacent")',
            )
        )
    shape = Shape(new_layers, new_width, level.shape.heads, level.shape.intermediate)
    return ShapeStep(shape, problems, returns_to=match)
