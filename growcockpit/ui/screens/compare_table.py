"""The compare screen's verdict table, fitted to its width, and the full verdict of one run.

A verdict ("not comparable with baseline (data source a vs b; sequence length 64 vs
32): a different loss, no ratio") is longer than a table row at 80 columns: cut at the
border it read "not compar". Each row keeps one line — every run in view, its verdict
ellipsized to the room left — and the run highlighted in the run list gets its verdict
whole, wrapped, in a pane of its own."""

from __future__ import annotations

from dataclasses import dataclass

from growcockpit.compare import RunProgress
from growcockpit.compare.verdict import Verdict
from growcockpit.session.compare_view import short_verdict

CELL_PAD = 2  # DataTable pads each cell by one column on each side
VAL_W = len("final val")
NAME_MIN = 10
PLAN_MAX = 16
VERDICT_MIN = 24  # below this the plan column goes, then the final val (both in the detail pane)
VERDICT_FLOOR = 8  # a screen narrower than any layout still gets the verdict's head
HIGHLIGHT = "▸ "


def ellipsize(text: str, room: int) -> str:
    """`text` whole if it fits `room` columns, else its head and a …."""
    if len(text) <= room:
        return text
    return text[: max(0, room - 1)] + "…" if room > 0 else ""


@dataclass(frozen=True)
class Widths:
    """Column widths (content, without the cells' padding); 0: no such column (the
    detail pane has the value)."""

    name: int
    val: int
    verdict: int
    plan: int

    @property
    def columns(self) -> list[tuple[str, int]]:
        """(label, width) of each column shown: fixed widths, so no frame draws one wider."""
        shown = [("run", self.name), ("final val", self.val), ("verdict", self.verdict)]
        return [(col, w) for col, w in [*shown, ("plan", self.plan)] if w]


def fit_columns(width: int, names: list[str], plans: list[str]) -> Widths:
    """Widths that fill `width` without a horizontal scroll: names whole and the verdict
    the rest. Where the verdict would get less than VERDICT_MIN the plan column goes, then
    the final val (both are in the detail pane), then the names are cut."""
    whole = max([NAME_MIN, *(len(n) + len(HIGHLIGHT) for n in names)])
    plan = min(PLAN_MAX, max([len("plan"), *(len(p) for p in plans)]))
    for name in (whole, min(whole, max(NAME_MIN, width // 4))):
        rest = width - name - 2 * CELL_PAD  # the verdict's, with no other column
        if rest - VAL_W - plan - 2 * CELL_PAD >= VERDICT_MIN:
            return Widths(name, VAL_W, rest - VAL_W - plan - 2 * CELL_PAD, plan)
        if rest - VAL_W - CELL_PAD >= VERDICT_MIN:
            return Widths(name, VAL_W, rest - VAL_W - CELL_PAD, 0)
        if rest >= VERDICT_MIN and name == whole:
            return Widths(name, 0, rest, 0)
    return Widths(name, 0, max(VERDICT_FLOOR, rest), 0)


def verdict_row(
    run: RunProgress, verdict: Verdict | None, widths: Widths, highlighted: bool
) -> list[str]:
    """The row's cells for `widths.columns`, cut to their widths; the highlighted run ▸."""
    head = HIGHLIGHT if highlighted else ""
    name = head + ellipsize(run.name, widths.name - len(head))
    val = "–" if run.final_val_loss is None else f"{run.final_val_loss:.3f}"
    text = "" if verdict is None else short_verdict(verdict)
    cells = [name] + ([val] if widths.val else []) + [ellipsize(text, widths.verdict)]
    return cells + ([ellipsize(run.plan_name, widths.plan)] if widths.plan else [])


def verdict_detail(run: RunProgress | None, verdict: Verdict | None, name: str, gate: str) -> str:
    """The highlighted run's verdict whole (the pane wraps it), its plan, the depth gate."""
    if run is None:
        return f"{name}: not selected (space adds it)"
    val = "–" if run.final_val_loss is None else f"{run.final_val_loss:.3f}"
    lines = [run.name, f"final val {val} · plan {run.plan_name or '?'}"]
    lines.append(short_verdict(verdict) if verdict is not None else "no verdict: no target yet")
    if gate:
        lines.append(gate)
    return "\n".join(lines)
