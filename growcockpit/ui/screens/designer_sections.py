"""What the designer's section tabs hold (Plan & model, Data, Optimizer), built on demand.

The stage editor that `e` opens on a running run shows these sections read-only; building
their ~50 fields made `e` freeze the dashboard for seconds before the editor appeared (the
widgets, not any check). There they are built when their tab is first shown, behind a
one-line placeholder; the plain designer builds them at once.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from growcockpit.plan.types import BudgetSpec, Plan
from growcockpit.ui.widgets.plan_form import SectionForm

SECTION_TABS = ("tab-model", "tab-data", "tab-optim")
LAZY = "lazy-sections"  # the placeholder's class
BUILDING = "-building"  # a form being mounted: its fields do not exist yet


def pane_scroll(*, id: str | None = None) -> VerticalScroll:  # noqa: A002 - Textual's name
    """A tab's scroll pane, not itself a focus stop: the first Tab from the tab bar lands in
    the tab's first field (it stopped on the pane, and the letters typed next went to the
    screen's keys: `x` removed a stage, the `l` of a path opened Launch). Focusing a field
    scrolls it into view, so the pane needs no focus of its own."""
    return VerticalScroll(id=id, can_focus=False)


def section_widgets(plan: Plan, tab: str, disabled: bool) -> list[Widget]:
    """The forms (and the Data tab's corpus line) of one section tab."""
    if tab == "tab-model":
        return [
            SectionForm("plan", plan, id="form-plan", disabled=disabled),
            SectionForm("model", plan.model, id="form-model", disabled=disabled),
            SectionForm("budget", plan.budget or BudgetSpec(), id="form-budget", disabled=disabled),
        ]
    if tab == "tab-data":
        return [
            SectionForm("data", plan.data, id="form-data", disabled=disabled),
            Static("", id="data-state", markup=False),
        ]
    return [SectionForm("optim", plan.optim, id="form-optim", disabled=disabled)]


def placeholder() -> Static:
    return Static("loading the plan's sections (read-only here)…", classes=LAZY)


async def build_lazy(pane: Widget, plan: Plan, disabled: bool) -> bool:
    """Build a section tab's forms in place of its placeholder, if it has one (True). While
    they mount they carry BUILDING: a redraw skips a form whose fields do not exist yet."""
    lazy = pane.query(f".{LAZY}")
    if not lazy or pane.id is None:
        return False
    lazy.remove()
    forms = section_widgets(plan, pane.id, disabled)
    for form in forms:
        form.add_class(BUILDING)
    await pane.query_one(VerticalScroll).mount_all(forms)
    for form in forms:
        form.remove_class(BUILDING)
    return True
