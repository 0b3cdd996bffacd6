"""The stage timeline: one bar per stage, as deep as the model is in that stage,
trainable, new and frozen layers in different colours (from the theme)."""

from __future__ import annotations

import math

from rich.text import Text
from textual.widgets import Static

from growcockpit.plan import estimate_cost, fit_budget, resolve_shapes
from growcockpit.plan.types import Plan
from growcockpit.ui.widgets.text_bits import colour

NAME_W = 14  # the least room for "N name"; a longer name widens the column


def name_width(plan: Plan, width: int) -> int:
    """The name column: wide enough for every "N name" whole, up to half the width."""
    longest = max((len(f"{i + 1} {s.name}") for i, s in enumerate(plan.stages)), default=0)
    return max(NAME_W, min(longest + 1, max(NAME_W, width // 2)))


def timeline_text(plan: Plan, widget: Static, width: int) -> Text:
    text = Text()
    try:
        shapes = resolve_shapes(plan)
    except Exception:  # best effort on a plan being edited
        shapes = []
    if not shapes:
        return Text("no stages", style="dim")
    deepest = max([s.layers for s in shapes] + [plan.model.final_layers, 1])
    name_w = name_width(plan, width)
    bar_w = max(8, width - name_w - 22)
    per_char = max(1, math.ceil(deepest / bar_w))
    c_train, c_new, c_frozen = (colour(widget, v) for v in ("gc-trainable", "gc-new", "gc-frozen"))
    for shape, stage in zip(shapes, plan.stages, strict=False):
        name = f"{shape.index + 1} {stage.name}"
        if len(name) >= name_w:  # longer than half the width: cut, and say so
            name = name[: name_w - 2] + "…"
        text.append(f"{name:<{name_w}}")
        trainable = set(shape.trainable_layers)
        new_from = shape.prev_layers if shape.added_layers > 0 and shape.index > 0 else shape.layers
        for start in range(0, shape.layers, per_char):
            ids = range(start, min(shape.layers, start + per_char))
            if any(i in trainable and i >= new_from for i in ids):
                text.append("█", style=c_new)
            elif any(i in trainable for i in ids):
                text.append("█", style=c_train)
            else:
                text.append("▒", style=c_frozen)
        pad = math.ceil(deepest / per_char) - math.ceil(shape.layers / per_char)
        text.append(" " * pad)
        width_note = f" w{shape.width}" if shape.width != plan.model.hidden_size else ""
        text.append(f" {shape.layers:>3}L{width_note} {len(trainable):>3} train", style="dim")
        text.append("\n")
    unit = f"(1 char: {per_char} layers)" if per_char > 1 else "(bottom → top)"
    text.append(f"{'':<{name_w}}")
    text.append("█", style=c_train)
    text.append(" trainable  ")
    text.append("█", style=c_new)
    text.append(" new  ")
    text.append("▒", style=c_frozen)
    text.append(f" frozen   {unit}", style="")
    _budget_row(plan, text, bar_w, name_w)
    return text


def _budget_row(plan: Plan, text: Text, bar_w: int, name_w: int) -> None:
    """Under a budget: each stage's share of the estimated cost as a run of its number,
    and ┃ where the budget ends (the fill stage's run reaches it when the fit is met)."""
    fit = fit_budget(plan)
    if fit is None or fit.budget_units <= 0:
        return
    cost = estimate_cost(plan)
    scale = max(fit.budget_units, cost.total) / bar_w
    text.append(f"\n{'budget':<{name_w}}")
    used = 0
    for sc in cost.stages:
        n = round(sc.total / scale) if scale > 0 else 0
        style = "bold" if sc.index == fit.fill_index else "dim"
        text.append(str(sc.index + 1)[-1] * n, style=style)
        used += n
    mark = round(fit.budget_units / scale) if scale > 0 else 0
    text.append(" " * max(0, mark - used))
    text.append("┃", style="bold")
    text.append(f" {cost.total / fit.budget_units:.2f}× budget", style="dim")


class StageTimeline(Static):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__("", id=id)
        self._plan: Plan | None = None

    def show_plan(self, plan: Plan) -> None:
        self._plan = plan
        self.update(timeline_text(plan, self, self.content_region.width or 80))

    def on_resize(self) -> None:
        if self._plan is not None:
            self.update(timeline_text(self._plan, self, self.content_region.width or 80))
