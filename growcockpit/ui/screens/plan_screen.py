"""Show a plan (stages, which layers train, estimated cost) and launch it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from growcockpit.plan import PlanError, load_plan
from growcockpit.plan.types import Plan
from growcockpit.ui.widgets import StageTable


def estimate(plan: Plan) -> tuple[Any, str]:
    """(PlanCost or None, one line for the screen). Never raises."""
    try:
        from growcockpit.plan import estimate_cost
    except ImportError:
        return None, "cost estimate: not available in this version"
    try:
        cost = estimate_cost(plan)
    except Exception as exc:  # the estimate is advisory: never block a launch on it
        return None, f"cost estimate failed: {exc}"
    speedup = getattr(cost, "speedup", None)
    if not speedup:
        return cost, "cost estimate: –"
    return cost, (
        f"estimated compute: {1 / speedup:.2f}× the full-depth baseline "
        f"({plan.model.final_layers} layers, {plan.total_steps} steps, all trained): "
        f"{speedup:.2f}× faster"
    )


def display_path(path: Path) -> str:
    """Relative to the working directory when inside it (short, and stable in snapshots)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def plan_summary(plan: Plan) -> str:
    m, d, o = plan.model, plan.data, plan.optim
    return (
        f"model {m.family} · hidden {m.hidden_size} · {m.num_heads} heads · "
        f"{m.final_layers} layers at the end · seq {m.max_seq_len}\n"
        f"data {d.source} · tokenizer {d.tokenizer} · {o.name} lr {o.lr:g} · "
        f"batch {o.batch_size} · {len(plan.stages)} stages, {plan.total_steps} steps"
    )


class PlanScreen(Screen[None]):
    BINDINGS = [
        Binding("l", "launch", "Launch"),
        Binding("q", "app.quit", "Quit"),
    ]

    class LaunchRequested(Message):
        def __init__(self, plan_path: Path) -> None:
            super().__init__()
            self.plan_path = plan_path

    def __init__(self, plan_path: Path) -> None:
        super().__init__()
        self.plan_path = Path(plan_path)
        self.plan: Plan | None = None
        self.cost: Any = None
        self.error = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-body"):
            yield Static("", id="plan-title")
            yield Static("", id="plan-description")
            yield Static("", id="plan-summary")
            yield StageTable(id="stage-table")
            yield Static("", id="plan-cost")
            yield Static("", id="plan-error")
            with Horizontal(id="plan-actions"):
                yield Button("Launch (l)", id="launch", variant="success")
                yield Static(f"plan file: {display_path(self.plan_path)}", id="plan-path")
        yield Footer()

    def on_mount(self) -> None:
        try:
            self.plan = load_plan(self.plan_path)
        except (PlanError, OSError) as exc:
            self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if self.plan is None:
            self.query_one("#plan-title", Static).update(self.plan_path.name)
            self.query_one("#plan-error", Static).update(f"cannot launch: {self.error}")
            self.query_one("#launch", Button).disabled = True
            return
        plan = self.plan
        self.cost, cost_line = estimate(plan)
        self.query_one("#plan-title", Static).update(plan.name)
        self.query_one("#plan-description", Static).update(plan.description or "")
        self.query_one("#plan-summary", Static).update(plan_summary(plan))
        self.query_one("#plan-cost", Static).update(cost_line)
        self.query_one(StageTable).show_plan(plan, self.cost)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "launch":
            event.stop()
            self.action_launch()

    def action_launch(self) -> None:
        if self.plan is None:
            self.notify(f"cannot launch: {self.error}", severity="error")
            return
        self.post_message(self.LaunchRequested(self.plan_path))
