"""The model shape each stage trains at, and the problems of the shape chain.

Operators (methods.md §1-§3) and what they do to (layers, width):

- ``init``: builds the model at `layers`, full width (model.hidden_size).
- ``continue``: keeps the shape.
- ``stack``: adds layers on top; width unchanged.
- ``coalesce``: halves width (hidden, heads and FFN together; `width`
  defaults to half the previous width, or give the previous width for a
  depth-only coalesce) and/or depth (`layers` = previous // 2 halves depth,
  `layers` = previous keeps it). Its input shape is remembered as a
  snapshot: the level-k checkpoint taken just before coalescing.
- ``decoalesce`` / ``interpolate``: double width and/or depth back to the
  shape of an open snapshot (`width` defaults to the most recent snapshot's
  width); ``interpolate`` also mixes in that snapshot's weights with `alpha`.
  Returning to a snapshot closes it and every snapshot opened after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from growcockpit.plan.types import Plan, trainable_layer_ids


@dataclass
class StageShape:
    """Shape of the model while stage `index` trains."""

    index: int
    layers: int
    width: int
    heads: int
    intermediate: int
    prev_layers: int
    prev_width: int
    added_layers: int
    trainable_layers: list[int] = field(default_factory=list)


@dataclass
class _Snapshot:
    stage: int  # index of the coalesce stage whose input this is
    layers: int
    width: int
    heads: int
    intermediate: int


Problem = tuple[str, str]  # (key path, problem)


def _scaled(full: int, width: int, hidden: int) -> int:
    return max(1, full * width // hidden) if hidden > 0 else full


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
    snapshots: list[_Snapshot] = []
    layers, width, heads, inter = 0, hidden, model.num_heads, model.intermediate_size

    for index, stage in enumerate(plan.stages):
        key = f"stages[{index}]"
        prev_layers, prev_width, prev_heads, prev_inter = layers, width, heads, inter
        op = stage.enter
        new_layers = stage.layers
        new_width = stage.width if stage.width is not None else prev_width
        new_heads, new_inter = prev_heads, prev_inter

        if index == 0 and op != "init":
            problems.append(
                (
                    f"{key}.enter",
                    f'the first stage must build the model, got "{op}"; use enter = "init" (or leave enter out)',
                )
            )
        if op == "init":
            if index > 0:
                problems.append(
                    (
                        f"{key}.enter",
                        '"init" is only for the first stage (it would discard the trained model); '
                        'use "continue", "stack", "coalesce", "decoalesce" or "interpolate"',
                    )
                )
            new_width = stage.width if stage.width is not None else hidden
            if stage.width is not None and stage.width != hidden:
                problems.append(
                    (
                        f"{key}.width",
                        f"init builds the model at model.hidden_size = {hidden}, not {stage.width}; "
                        'leave width out, and train narrower in a later enter = "coalesce" stage',
                    )
                )
                new_width = hidden
            new_heads, new_inter = model.num_heads, model.intermediate_size
        elif op == "continue":
            if new_layers != prev_layers:
                verb = "stack" if new_layers > prev_layers else "coalesce"
                problems.append(
                    (
                        f"{key}.layers",
                        f'"continue" keeps the depth, but layers goes {prev_layers} → {new_layers}; '
                        f'set layers = {prev_layers}, or use enter = "{verb}"',
                    )
                )
            if new_width != prev_width:
                problems.append(
                    (
                        f"{key}.width",
                        f'"continue" keeps the width, but width goes {prev_width} → {new_width}; '
                        "leave width out, or use coalesce/decoalesce",
                    )
                )
        elif op == "stack":
            if new_layers <= prev_layers:
                problems.append(
                    (
                        f"{key}.layers",
                        f'"stack" must add layers, but layers goes {prev_layers} → {new_layers}; '
                        f'set layers > {prev_layers}, or use enter = "continue"',
                    )
                )
            elif stage.source in ("bottom", "middle") and new_layers - prev_layers > prev_layers:
                problems.append(
                    (
                        f"{key}.layers",
                        f'source = "{stage.source}" copies existing layers, but {new_layers - prev_layers} are added '
                        f"to only {prev_layers} ({prev_layers} → {new_layers}); set layers ≤ {2 * prev_layers}, "
                        'or use source = "top" or "random"',
                    )
                )
            if new_width != prev_width:
                problems.append(
                    (
                        f"{key}.width",
                        f'"stack" keeps the width, but width goes {prev_width} → {new_width}; leave width out',
                    )
                )
        elif op == "coalesce":
            new_width = stage.width if stage.width is not None else prev_width // 2
            halve_width = new_width != prev_width
            halve_depth = new_layers != prev_layers
            if halve_width and new_width * 2 != prev_width:
                problems.append(
                    (
                        f"{key}.width",
                        f"coalescing halves the width, so {prev_width} → {prev_width // 2}, not {new_width}; "
                        f"set width = {prev_width // 2} (or {prev_width} to halve depth only), or leave it out",
                    )
                )
            elif halve_width:
                odd = [
                    what
                    for what, n in (
                        ("width", prev_width),
                        ("heads", prev_heads),
                        ("intermediate size", prev_inter),
                    )
                    if n % 2
                ]
                if odd:
                    problems.append(
                        (
                            f"{key}.width",
                            f"cannot halve the width: {', '.join(odd)} odd ({prev_width} wide, {prev_heads} heads, "
                            f"FFN {prev_inter}); set width = {prev_width} to coalesce depth only",
                        )
                    )
                new_heads, new_inter = max(1, prev_heads // 2), max(1, prev_inter // 2)
            if halve_depth and (prev_layers % 2 or new_layers * 2 != prev_layers):
                if prev_layers % 2:
                    problems.append(
                        (
                            f"{key}.layers",
                            f"cannot halve an odd depth ({prev_layers}): coalescing merges pairs of layers; "
                            f"set layers = {prev_layers} to coalesce width only, or make the previous depth even",
                        )
                    )
                else:
                    problems.append(
                        (
                            f"{key}.layers",
                            f"coalescing halves the depth, so {prev_layers} → {prev_layers // 2}, not {new_layers}; "
                            f"set layers = {prev_layers // 2} (or {prev_layers} to halve width only)",
                        )
                    )
            if not halve_width and not halve_depth:
                problems.append(
                    (
                        f"{key}.enter",
                        f"coalesce changes nothing ({prev_layers} layers, width {prev_width}); "
                        f"set layers = {prev_layers // 2} and/or leave width out to halve it",
                    )
                )
            snapshots.append(_Snapshot(index, prev_layers, prev_width, prev_heads, prev_inter))
        elif op in ("decoalesce", "interpolate"):
            if stage.width is None:
                new_width = snapshots[-1].width if snapshots else min(2 * prev_width, hidden)
            match = next(
                (
                    i
                    for i in range(len(snapshots) - 1, -1, -1)
                    if (snapshots[i].layers, snapshots[i].width) == (new_layers, new_width)
                ),
                None,
            )
            factor_ok = new_layers in (prev_layers, 2 * prev_layers) and new_width in (
                prev_width,
                2 * prev_width,
            )
            grows = (new_layers, new_width) != (prev_layers, prev_width)
            open_shapes = ", ".join(
                f"{s.layers} layers × width {s.width}" for s in reversed(snapshots)
            )
            if not factor_ok or not grows:
                problems.append(
                    (
                        f"{key}.width"
                        if grows and new_layers in (prev_layers, 2 * prev_layers)
                        else f"{key}.layers",
                        f'"{op}" doubles depth and/or width ({prev_layers} layers × width {prev_width} → '
                        f"{2 * prev_layers} and/or {2 * prev_width}), but this stage asks for {new_layers} × {new_width}; "
                        + (
                            f"return to {open_shapes}"
                            if snapshots
                            else "coalesce earlier in the plan first"
                        ),
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
                            if snapshots
                            else 'add an enter = "coalesce" stage before it'
                        ),
                    )
                )
            if match is not None:
                snap = snapshots[match]
                new_heads, new_inter = snap.heads, snap.intermediate
                del snapshots[match:]
            else:
                new_heads = _scaled(model.num_heads, new_width, hidden)
                new_inter = _scaled(model.intermediate_size, new_width, hidden)
        else:
            # unknown operator: reported by validate; keep the asked shape
            new_heads = _scaled(model.num_heads, new_width, hidden)
            new_inter = _scaled(model.intermediate_size, new_width, hidden)

        layers, width, heads, inter = new_layers, new_width, new_heads, new_inter
        shapes.append(
            StageShape(
                index=index,
                layers=layers,
                width=width,
                heads=heads,
                intermediate=inter,
                prev_layers=prev_layers,
                prev_width=prev_width,
                added_layers=max(0, layers - prev_layers),
                trainable_layers=_trainable(plan, index, prev_layers),
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
