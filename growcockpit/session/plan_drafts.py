"""Pure helpers of the plan designer (no Textual): a fresh plan, the next stage to add,
unique names, the cost line and summary, and the paths a plan is saved to."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from growcockpit.plan.task_source import is_task_source, task_vocab_size
from growcockpit.plan.types import Plan, Stage
from growcockpit.resources import sample_plans_dir
from growcockpit.text.wording import counted, speed_word


def estimate(plan: Plan) -> tuple[Any, str]:
    """(PlanCost or None, one line for the screen). Never raises."""
    try:
        from growcockpit.plan import estimate_cost

        cost = estimate_cost(plan)
    except Exception as exc:  # the estimate is advisory: never block a launch on it
        return None, f"cost estimate unavailable: {exc}"
    speedup = getattr(cost, "speedup", None)
    if not speedup:
        return cost, "cost estimate: –"
    return cost, (
        f"estimated compute: {1 / speedup:.2f}× the full-depth baseline "
        f"({counted(plan.model.final_layers, 'layer')}, {counted(plan.total_steps, 'step')}, "
        f"all trained): {speed_word(speedup)}"
    )


def display_path(path: Path | None) -> str:
    """Relative to the working directory when inside it (short, and stable in snapshots)."""
    if path is None:
        return "(not saved yet)"
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def plan_summary(plan: Plan) -> str:
    m, d, o = plan.model, plan.data, plan.optim
    words = (  # a task has no tokenizer to name: its fixed vocabulary, as `plan show` says
        f"k {d.hops}, alphabet {d.alphabet}, fixed vocabulary {task_vocab_size(d)}"
        if is_task_source(d.source)
        else f"tokenizer {d.tokenizer}"
    )
    return (
        f"model {m.family} · hidden {m.hidden_size} · {m.num_heads} heads · "
        f"{counted(m.final_layers, 'layer')} at the end · seq {m.max_seq_len}\n"
        f"data {d.source} · {words} · {o.name} lr {o.lr:g} · "
        f"batch {o.batch_size} · {counted(len(plan.stages), 'stage')}, {counted(plan.total_steps, 'step')}"
    )


def new_plan(name: str = "my-plan") -> Plan:
    """A fresh, valid plan: one full-depth stage to build on."""
    return Plan(name=name, stages=[Stage(name="stage-1", layers=4, steps=200, enter="init")])


def unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    stem = re.sub(r"-\d+$", "", base)
    n = 2
    while f"{stem}-{n}" in taken:
        n += 1
    return f"{stem}-{n}"


def next_stage(plan: Plan, after: int) -> Stage:
    """A sensible stage to add after `after`: grow toward the final depth, train the new layers."""
    prev = plan.stages[after] if plan.stages else None
    taken = {s.name for s in plan.stages}
    if prev is None:
        return Stage(name="stage-1", layers=plan.model.final_layers, steps=200, enter="init")
    final = plan.model.final_layers
    if prev.layers < final:
        layers = min(final, max(prev.layers + 1, 2 * prev.layers))
        return Stage(
            name=unique_name(f"grow-{layers}", taken),
            layers=layers,
            steps=prev.steps,
            enter="stack",
            train="new",
        )
    return Stage(
        name=unique_name("all-layers", taken), layers=prev.layers, steps=prev.steps, train="all"
    )


def is_sample(path: Path | None) -> bool:
    if path is None:
        return False
    try:
        return path.resolve().parent == sample_plans_dir().resolve()
    except OSError:
        return False


def save_as_default(plan: Plan, path: Path | None) -> str:
    """The name "save as" offers: the plan's own file, or a new one for a sample or a draft."""
    if path is None or is_sample(path):
        return f"{plan.name}.toml"
    return display_path(path)


def path_problem(text: str) -> str:
    if not text.strip():
        return "give a file name, e.g. my-plan.toml"
    path = Path(text.strip()).expanduser()
    if path.suffix != ".toml":
        return "the file name must end in .toml"
    if not path.parent.exists():
        return f"{path.parent}: no such directory"
    if path.is_dir():
        return "that is a directory; give a file name"
    return ""
