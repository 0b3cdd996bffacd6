"""Where a step's time goes (forward, backward, optimizer, data), tokens/s, and each
stage's mean step time, so the speedup of freezing layers is visible; plus a plot of
tokens/s on the dashboard's x axis with the same vertical markers as the loss."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from growcockpit.session.plot_view import Curves, series_curve
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.loss_plot import AxisPlot
from growcockpit.ui.widgets.text_bits import colour, num

PARTS = (
    ("fwd", "fwd_ms", "gc-train-line"),
    ("bwd", "bwd_ms", "gc-val-line"),
    ("opt", "opt_ms", "gc-lr"),
    ("data", "data_ms", "gc-frozen"),
)


def breakdown_text(state: RunState, widget: Static, width: int) -> Text:
    text = Text()
    values = [(name, getattr(state, attr), var) for name, attr, var in PARTS]
    known = [(n, v, var) for n, v, var in values if v is not None]
    total = state.step_ms or sum(v for _, v, _ in known) or 0.0
    text.append("step ", style="bold")
    text.append(f"{num(state.step_ms, '.1f')} ms", style="bold")
    text.append(f"   {num(state.tokens_per_s, ',.0f')} tok/s\n")
    bar_w = max(10, width - 2)
    if known and total > 0:
        used = 0
        for _name, v, var in known:
            n = min(bar_w - used, round(bar_w * v / total))
            text.append("█" * n, style=colour(widget, var))
            used += n
        if used < bar_w:
            text.append("░" * (bar_w - used), style="dim")
        text.append("\n")
        for name, v, var in known:
            text.append("■ ", style=colour(widget, var))
            text.append(f"{name} {v:.1f} ms ({100 * v / total:.0f}%)  ")
        text.append("\n")
    else:
        text.append("no per-phase timing yet (fwd/bwd/opt/data)\n", style="dim")
    timings = [t for _, t in sorted(state.stage_timings.items()) if t.n]
    if timings:
        text.append("\n")
        text.append(
            f"{'stage':<16}{'layers':>7}{'train':>6}{'step ms':>9}{'tok/s':>9}{'speed':>7}\n",
            style="bold",
        )
        base = timings[0].step_ms or None
        for t in timings:
            speed = f"{base / t.step_ms:.2f}×" if base and t.step_ms else "–"
            name = f"{t.index + 1} {t.name}"[:15]
            text.append(
                f"{name:<16}{t.layers:>7}{t.trainable:>6}{t.step_ms:>9.1f}{t.tokens_per_s:>9,.0f}{speed:>7}\n"
            )
        text.append("speed: vs stage 1's mean step time", style="dim")
    return text


class TimingPanel(Static):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__("", id=id)
        self._last = ""

    def show_state(self, state: RunState) -> None:
        text = breakdown_text(state, self, self.content_region.width or 60)
        if text.plain != self._last or not self._last:
            self._last = text.plain
            self.update(text)


class ThroughputPlot(AxisPlot):
    """tokens/s on the dashboard's x axis and zoom, markers as on the loss plot."""

    TITLE = "tokens/s"

    def curves(self, state: RunState, max_points: int) -> Curves:
        return series_curve(state, state.tok_s, "tokens/s", self.view, max_points)
