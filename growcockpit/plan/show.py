"""Plain-text summary of a plan (what `growcockpit plan show PLAN` prints)."""

from __future__ import annotations

from collections.abc import Iterable

from growcockpit.plan.advance_checks import min_delta_of
from growcockpit.plan.budget import FittedBudget, fit_budget
from growcockpit.plan.cost import PlanCost, estimate_cost
from growcockpit.plan.families import FAMILIES, family_facts
from growcockpit.plan.init_from import tokenizer_used
from growcockpit.plan.operators import operator_label
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.task_source import is_task_source, task_vocab_size
from growcockpit.plan.types import Plan, Stage
from growcockpit.text.wording import counted


def layer_ranges(ids: Iterable[int], sep: str = ", ") -> str:
    """Layer ids as compact ranges, in any order: [0, 1, 2, 5] → "0-2, 5"; [] → ""."""
    ordered = sorted(ids)
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return sep.join(runs)


def format_ids(ids: list[int]) -> str:
    """The plan table's form: [0, 1, 2, 5] → "0-2,5"; [] → "-"."""
    return layer_ranges(ids, ",") or "-"


def _advance_label(stage: Stage) -> str:
    """e.g. "plateau(50,≤2/1M)": window and min_delta per 1M tokens."""
    if stage.advance != "plateau":
        return stage.advance
    return f"plateau({stage.patience},≤{min_delta_of(stage.min_delta):g}/1M)"


def _train_label(stage: Stage) -> str:
    extras = []
    if stage.embeddings_trainable():
        extras.append("+emb")
    if not stage.head_trainable():
        extras.append("-head")
    return stage.train + "".join(extras)


def text_table(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows as aligned columns under a rule after the header; `right`: right-aligned columns."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def budget_lines(plan: Plan, fit: FittedBudget | None = None) -> list[str]:
    """The budget, the fill stage's fitted steps and the equivalent baseline ([] without a budget)."""
    fit = fit if fit is not None else fit_budget(plan)
    b = plan.budget
    if fit is None or b is None:
        return []
    given = (
        f"{b.baseline_steps} baseline steps"
        if b.baseline_steps is not None
        else f"{b.minutes:g} min at {b.unit_ms:g} ms/unit"
    )
    wall = f", ≈ {fit.minutes:.1f} min" if fit.minutes is not None else ""
    steps = f"{fit.fitted_steps} steps" if fit.ok else "cannot be met"
    return [
        f"budget: {given} = {fit.budget_units:,.0f} cost units "
        f"(≈ {fit.baseline_steps:.1f} steps of the full-depth baseline{wall})",
        f'fill:   stage {fit.fill_index + 1} "{fit.fill_name}" fitted to {steps}; '
        f"plan estimate {fit.total_units:,.0f} units ({fit.total_units / fit.budget_units:.3f} × budget)"
        if fit.budget_units > 0
        else f'fill:   stage {fit.fill_index + 1} "{fit.fill_name}"',
    ]


def _model_extras(plan: Plan) -> list[str]:
    """The family's own keys (their defaults when the plan leaves them out) and init_from."""
    m = plan.model
    keys = family_facts(m.family).model_keys if m.family in FAMILIES else {}
    lines = []
    if keys:
        values = {key: m.kv_heads if key == "num_kv_heads" else m.family_value(key) for key in keys}
        shown = ", ".join(f"{key} {_value(value)}" for key, value in values.items())
        lines.append(f"       {m.family} keys: {shown}")
    if m.init_from is not None:
        lines.append(f"       init_from {m.init_from} (stage 1 starts from its weights)")
    return lines


def _value(value: object) -> str:
    return (
        str(value).lower()
        if isinstance(value, bool)
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


def _column(plan: Plan) -> str:
    column = plan.data.text_column
    return "" if column == "text" else f" (column {column!r})"


def _tokenizer(plan: Plan) -> str:
    used = tokenizer_used(plan)
    if used == plan.data.tokenizer:
        return used
    return f"{used} (the init_from model's own; the plan says {plan.data.tokenizer})"


def format_plan(plan: Plan, cost: PlanCost | None = None) -> str:
    """Name, model/data/optim summary, the stage table, the budget and the cost estimate."""
    if cost is None:
        cost = estimate_cost(plan)
    m, d, o = plan.model, plan.data, plan.optim
    lines = [f"plan: {plan.name}"]
    if plan.description:
        lines.append(f"  {plan.description}")
    lines += [
        f"model: {m.family}, {counted(m.final_layers, 'layer')} × hidden {m.hidden_size}, "
        f"{counted(m.num_heads, 'head')}, "
        f"FFN {m.intermediate_size}, max_seq_len {m.max_seq_len}, dropout {m.dropout:g}",
        *_model_extras(plan),
        (
            f"data:  {d.source} (k = {d.hops} hops, alphabet {d.alphabet}), fixed vocabulary "
            f"{task_vocab_size(d)}, seq_len {d.seq_len}, generated from the seed"
            if is_task_source(d.source)
            else f"data:  {d.source}{_column(plan)}, tokenizer {_tokenizer(plan)}, seq_len {d.seq_len}, val_fraction {d.val_fraction:g}"
        )
        + (
            f", mlm_probability {d.mlm_probability:g}"
            if family_facts(m.family).objective == "masked"
            else ""
        ),
        f"optim: {o.name}, lr {o.lr:g}, {o.schedule} schedule{_decay(plan)}, warmup {o.warmup_steps}, batch {o.batch_size}, "
        f"weight_decay {o.weight_decay:g}, grad_clip {o.grad_clip:g}, optimizer_reset {str(o.optimizer_reset).lower()}",
        f"seed:  {plan.seed}",
        *_distributed(plan),
        "",
    ]
    shapes = resolve_shapes(plan)
    costs = {c.index: c for c in cost.stages}
    header = [
        "#",
        "stage",
        "enter",
        "layers",
        "width",
        "train",
        "trainable",
        "steps",
        "lr",
        "advance",
        "rel.cost",
    ]
    rows = [header]
    fit = fit_budget(plan)
    for stage, shape in zip(plan.stages, shapes, strict=True):
        sc = costs.get(shape.index)
        rows.append(
            [
                str(shape.index + 1),  # stages are numbered from 1 wherever they are shown
                stage.name,
                operator_label(stage, m.family),
                f"{shape.prev_layers}→{shape.layers}"
                if shape.index > 0 and shape.prev_layers != shape.layers
                else str(shape.layers),
                f"{shape.prev_width}→{shape.width}"
                if shape.prev_width != shape.width
                else str(shape.width),
                _train_label(stage),
                format_ids(shape.trainable_layers),
                f"{stage.steps}*"
                if fit is not None and fit.fill_index == shape.index
                else str(stage.steps),
                f"{stage.lr:g}" if stage.lr is not None else "·",
                _advance_label(stage),
                f"{sc.rel_step_cost:.2f}" if sc else "?",
            ]
        )
    lines += text_table(rows, right={0, 3, 4, 7, 10})
    lines += ["", *budget_lines(plan, fit)]
    lines += [
        f"probe:  stage {s.index + 1} trains {len(plan.stages[s.index].candidates)} candidates × "
        f"{plan.stages[s.index].probe_steps} steps = {s.probe / cost.baseline_step_cost:.1f} "
        "baseline steps of compute (in the estimate below)"
        for s in cost.stages
        if s.probe > 0 and cost.baseline_step_cost > 0
    ]
    lines += [
        f"total steps: {plan.total_steps}",
        f"estimated compute: {cost.ratio:.2f} × the full-depth baseline over the same "
        f"{plan.total_steps} steps ({counted(m.final_layers, 'layer')}, all trained) → speedup "
        f"{cost.speedup:.2f}×  (r = {cost.r:.2f}, head h = {cost.h:.2f} blocks)",
        "rel.cost: one step's cost relative to one baseline step (layers a→b: grown by the stage's operator;"
        " +emb: embeddings train; ·: optim.lr"
        + ("; *: fitted to the budget)" if fit is not None else ")"),
    ]
    return "\n".join(lines)


def _decay(plan: Plan) -> str:
    """A "wsd" plan's decay share (of the total steps, fitted or not: one schedule)."""
    if plan.optim.schedule != "wsd":
        return ""
    return f" (decay over the last {plan.optim.decay_fraction:.0%} of the steps)"


def _distributed(plan: Plan) -> list[str]:
    """A line only when the plan leaves DDP, the default."""
    d = plan.distributed
    if d.strategy == "ddp":
        return []
    offload = ", cpu_offload" if d.cpu_offload else ""
    return [f"distributed: {d.strategy}{offload} (sharded over the ranks of --nproc-per-node)"]
