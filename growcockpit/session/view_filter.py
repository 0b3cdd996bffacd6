"""The dashboard's `/` filter: one regular expression over layer rows, log lines and
plot series.

A long run has dozens of layers and thousands of log lines; the filter keeps
what matches (a layer by its index, `layer N`, state or health; a line by its
text; a plotted series by its name, as W&B and TensorBoard filter their panels).
Smart case, as in less and vim: case-insensitive unless the pattern has a capital
letter. A pattern that does not compile is a `FilterError` whose one-line message
a prompt can show as the user types. Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from growcockpit.protocol.layer_health import OK, HealthThresholds, LayerSample, health

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData

MAX_PATTERN = 200


class FilterError(ValueError):
    """The pattern cannot be a filter; the message is one line."""


@dataclass(frozen=True)
class ViewFilter:
    """What is shown; the empty filter shows everything."""

    text: str = ""
    regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str) -> ViewFilter:
        text = text.strip()
        if not text:
            return cls()
        if len(text) > MAX_PATTERN:
            raise FilterError(f"the pattern is {len(text)} characters; at most {MAX_PATTERN}")
        flags = 0 if any(ch.isupper() for ch in text) else re.IGNORECASE
        try:
            regex = re.compile(text, flags)
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise FilterError(f"not a regular expression: {exc.msg}{where}") from None
        except (RecursionError, OverflowError, ValueError):
            raise FilterError("not a regular expression: too complex") from None
        return cls(text, regex)

    @property
    def active(self) -> bool:
        return self.regex is not None

    def matches(self, *fields: str) -> bool:
        """True when the filter is off or matches any of `fields` (a search, not a full match)."""
        return self.regex is None or any(self.regex.search(f) for f in fields)

    def matches_layer(self, layer: int, state: str = "", health: str = "") -> bool:
        """A layer row: by index (`^3$`), by `layer 3`, by state (`frozen`) or health."""
        return self.matches(str(layer), f"layer {layer}", state, health)

    def describe(self, shown: int, total: int) -> str:
        """`/pattern/ · 3 of 12` for a border, or "" when the filter is off."""
        return f"/{self.text}/ · {shown} of {total}" if self.active else ""


def layer_verdicts(state: RunData) -> dict[int, str]:
    """Each layer's health (ok, starved, moved) from the run's thresholds: one place, so
    that the layer table and the heatmap keep the same layers for `starved`."""
    samples = [
        LayerSample(r.id, r.trainable, list(r.grad_hist), r.update_ratio)
        for r in state.layer_rows()
    ]
    return health(samples, HealthThresholds.of_plan(state.plan_dict))


def shown_layers(state: RunData, view_filter: ViewFilter, count: int, series: str) -> list[int]:
    """The layers of `0..count-1` whose rows a per-layer plot of `series` draws.

    A layer is kept as the layer table keeps it (index, `layer N`, state, health), so
    `^3$` narrows the table and the plot alike; a pattern naming the series itself
    (`grad`) keeps every layer, as a panel's name does in W&B.
    """
    if not view_filter.active or view_filter.matches(series):
        return list(range(count))
    verdicts = layer_verdicts(state)
    rows = state.layers
    return [
        i
        for i in range(count)
        if view_filter.matches_layer(i, rows[i].state if i in rows else "", verdicts.get(i, OK))
    ]


def filter_problem(text: str) -> str:
    """Why `text` cannot be a filter, or "" (a prompt's check)."""
    try:
        ViewFilter.parse(text)
    except FilterError as exc:
        return str(exc)
    return ""
