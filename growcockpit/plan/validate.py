"""Validate a typed `Plan`: every field, then the chain of stage shapes.

`plan_problems` returns every problem (the cockpit's editor lists them all);
`validate_plan` raises the first. Problems come in document order: top-level
keys, then [model], [data], [optim], [metrics], [checkpoint], then each stage.
With the plan's TOML text, each problem carries the line of its key.

Validation is pure: it reads nothing from disk and imports nothing beyond the standard
library and growcockpit's plan and text helpers. What the plan names on this machine
(data source, tokenizer, init_from's model) is `check_environment`'s (plan/environment.py),
whose answer a caller hands in as `environment` to be listed in the same order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from growcockpit.plan.advance_checks import advance_problems
from growcockpit.plan.budget import budget_problems, fill_index, fit_budget
from growcockpit.plan.data_rules import data_rule_problems, merge_environment
from growcockpit.plan.distributed_checks import distributed_problems
from growcockpit.plan.errors import PlanError
from growcockpit.plan.limits import limit_problems, quoted
from growcockpit.plan.locate import TomlLocator
from growcockpit.plan.model_checks import model_key_problems
from growcockpit.plan.names import name_problem
from growcockpit.plan.operators import OPTION_DEFAULTS, operators_with
from growcockpit.plan.probe import probe_problems
from growcockpit.plan.recipe_checks import recipe_problems
from growcockpit.plan.samples import samples_problems
from growcockpit.plan.shapes import walk_shapes
from growcockpit.plan.types import (
    ADVANCES,
    COMPILE_BACKENDS,
    FAMILIES,
    OPERATORS,
    OPTIMIZERS,
    PAIRINGS,
    PRECISIONS,
    SCHEDULES,
    STACK_SOURCES,
    TOGGLES,
    WANDB_MODES,
    Plan,
    Stage,
)

TRAIN_POLICIES: tuple[str, ...] = ("all", "new", "top:K", "layers:I,J", "none")
_ORDER = (
    "name",
    "description",
    "seed",
    "model",
    "data",
    "optim",
    "metrics",
    "checkpoint",
    "budget",
    "logging",
    "distributed",
    "samples",
)
_STAGE_KEY = re.compile(r"^stages\[(\d+)\]")

Problem = tuple[str, str]


def _choices(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class _Checks:
    """Collects (key, problem) pairs with small typed helpers."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, key: str, problem: str) -> None:
        self.problems.append((key, problem))

    def at_least(self, key: str, value: float | int, low: float | int, what: str = "") -> None:
        if not value >= low or (isinstance(value, float) and math.isinf(value)):
            hint = what or ("a positive number" if low > 0 else f"a number ≥ {low}")
            self.add(key, f"must be ≥ {low}, got {value}; set it to {hint}")

    def positive(self, key: str, value: float | int) -> None:
        if isinstance(value, float):
            if not (value > 0 and math.isfinite(value)):
                self.add(key, f"must be > 0, got {value}; set a positive number")
        elif value < 1:
            self.add(key, f"must be ≥ 1, got {value}; set a positive whole number")

    def fraction(
        self, key: str, value: float, *, closed_high: bool = False, open_low: bool = False
    ) -> None:
        low_ok = value > 0 if open_low else value >= 0
        high_ok = value <= 1 if closed_high else value < 1
        if not (low_ok and high_ok):
            interval = ("(" if open_low else "[") + "0, 1" + ("]" if closed_high else ")")
            self.add(key, f"must be in {interval}, got {value}; set a value in that range")

    def one_of(self, key: str, value: str, choices: tuple[str, ...]) -> bool:
        if value in choices:
            return True
        self.add(key, f"unknown value {quoted(value)}; use one of {_choices(choices)}")
        return False


def _check_sections(plan: Plan, c: _Checks, environment: Sequence[Problem]) -> None:
    if (problem := name_problem(plan.name)) is not None:
        c.add("name", problem)
    c.at_least("seed", plan.seed, 0, "a non-negative integer")

    m = plan.model
    c.one_of("model.family", m.family, FAMILIES)
    for field in ("hidden_size", "num_heads", "intermediate_size", "max_seq_len", "final_layers"):
        c.positive(f"model.{field}", getattr(m, field))
    if m.hidden_size >= 1 and m.num_heads >= 1 and m.hidden_size % m.num_heads:
        c.add(
            "model.hidden_size",
            f"{m.hidden_size} is not divisible by num_heads = {m.num_heads}; "
            f"use a multiple of {m.num_heads} (e.g. {m.num_heads * max(1, round(m.hidden_size / m.num_heads))}) or change num_heads",
        )
    c.fraction("model.dropout", m.dropout)

    d = plan.data
    # [data]'s and init_from's rules, and what `check_environment` found of them
    for key, problem in merge_environment(data_rule_problems(plan), environment):
        c.add(key, problem)
    c.positive("data.seq_len", d.seq_len)
    if d.seq_len >= 1 and m.max_seq_len >= 1 and d.seq_len > m.max_seq_len:
        c.add(
            "data.seq_len",
            f"{d.seq_len} is longer than model.max_seq_len = {m.max_seq_len}; "
            f"set seq_len ≤ {m.max_seq_len} or raise model.max_seq_len",
        )
    c.fraction("data.val_fraction", d.val_fraction)
    c.fraction("data.mlm_probability", d.mlm_probability, open_low=True)

    o = plan.optim
    c.one_of("optim.name", o.name, OPTIMIZERS)
    c.positive("optim.lr", o.lr)
    c.at_least("optim.warmup_steps", o.warmup_steps, 0)
    c.positive("optim.batch_size", o.batch_size)
    c.at_least("optim.weight_decay", o.weight_decay, 0.0)
    c.one_of("optim.schedule", o.schedule, SCHEDULES)
    c.fraction("optim.decay_fraction", o.decay_fraction, closed_high=True, open_low=True)
    c.at_least("optim.grad_clip", o.grad_clip, 0.0, "0 (off) or a positive number")
    c.positive("optim.grad_accum_steps", o.grad_accum_steps)
    c.one_of("optim.precision", o.precision, PRECISIONS)
    c.one_of("optim.compile_backend", o.compile_backend, COMPILE_BACKENDS)
    if o.compile_backend != "inductor" and not o.compile:
        c.add(
            "optim.compile_backend", "is used only with compile = true; set it or remove this key"
        )

    mt = plan.metrics
    for field in ("every_steps", "timing_every_steps", "eval_every_steps"):
        c.at_least(
            f"metrics.{field}", getattr(mt, field), 0, "0 (off) or a positive number of steps"
        )
    c.at_least(
        "metrics.system_every_s", mt.system_every_s, 0.0, "0 (off) or a positive number of seconds"
    )
    c.positive("metrics.eval_batches", mt.eval_batches)
    c.positive("metrics.log_every_steps", mt.log_every_steps)
    for field in ("spike_z", "spike_grad_z"):
        c.at_least(f"metrics.{field}", getattr(mt, field), 0.0, "0 (off) or a positive z-score")
    c.at_least("metrics.spike_window", mt.spike_window, 0, "0 (off) or a number of steps")
    c.at_least("metrics.starved_fraction", mt.starved_fraction, 0.0, "0 (off) or a fraction < 1")
    if mt.starved_fraction >= 1:
        c.add("metrics.starved_fraction", "must be below 1 (a fraction of the median grad norm)")
    c.positive("metrics.starved_samples", mt.starved_samples)

    ck = plan.checkpoint
    c.at_least("checkpoint.every_steps", ck.every_steps, 0, "0 (off) or a positive number of steps")
    c.at_least(
        "checkpoint.every_minutes", ck.every_minutes, 0.0, "0 (off) or a positive number of minutes"
    )
    c.at_least("checkpoint.keep", ck.keep, 0, "the number of checkpoints to keep")
    c.one_of("logging.wandb", plan.logging.wandb, WANDB_MODES)


def _check_train(key: str, stage: Stage, prev_layers: int, c: _Checks) -> None:
    train = stage.train
    if train in ("all", "none"):
        return
    if train == "new":
        if stage.layers <= prev_layers and stage.enter != "init":
            c.add(
                key,
                f'"new" but this stage adds no layers ({prev_layers} → {stage.layers}); '
                'use "all" or "top:K", or raise layers',
            )
        return
    if train.startswith("top:"):
        k = train.split(":", 1)[1].strip()
        if not re.fullmatch(r"[+-]?\d+", k):
            c.add(key, f'"{train}": K must be a whole number; write e.g. "top:2"')
        elif not 1 <= int(k) <= stage.layers:
            c.add(
                key,
                f'"{train}": K must be between 1 and layers = {stage.layers}; write "top:1" … "top:{stage.layers}"',
            )
        return
    if train.startswith("layers:"):
        ids = [i.strip() for i in train.split(":", 1)[1].split(",")]
        if not all(re.fullmatch(r"\d+", i) and int(i) < stage.layers for i in ids):
            c.add(
                key,
                f'"{train}": give layer indices 0 … {stage.layers - 1} separated by commas, '
                'e.g. "layers:4,5"',
            )
        return
    c.add(key, f'unknown train policy "{train}"; use one of {_choices(TRAIN_POLICIES)}')


def _check_stage(
    index: int,
    stage: Stage,
    prev_layers: int,
    names: dict[str, int],
    c: _Checks,
    *,
    fitted: bool = False,
) -> None:
    key = f"stages[{index}]"
    if not stage.name.strip():
        c.add(f"{key}.name", 'is empty; give the stage a unique name, e.g. name = "grow-4"')
    elif stage.name in names:
        c.add(
            f"{key}.name",
            f'duplicate stage name "{stage.name}" (also stages[{names[stage.name]}]); give each stage a unique name',
        )
    else:
        names[stage.name] = index
    c.positive(f"{key}.layers", stage.layers)
    if not fitted:  # a fill stage's steps come from the budget, checked there
        c.positive(f"{key}.steps", stage.steps)
    if stage.width is not None:
        c.positive(f"{key}.width", stage.width)
    c.one_of(f"{key}.enter", stage.enter, OPERATORS)
    _check_train(f"{key}.train", stage, prev_layers, c)

    c.one_of(f"{key}.source", stage.source, STACK_SOURCES)
    c.one_of(f"{key}.pairing", stage.pairing, PAIRINGS)
    if stage.alpha is not None and not 0.0 <= stage.alpha <= 1.0:
        c.add(
            f"{key}.alpha",
            f"must be in [0, 1], got {stage.alpha}; use e.g. 0.5 (BERT) or 0.25 (GPT-2)",
        )
    if stage.embeddings is not None:
        c.one_of(f"{key}.embeddings", stage.embeddings, TOGGLES)
    c.one_of(f"{key}.head", stage.head, TOGGLES)
    if stage.lr is not None:
        c.positive(f"{key}.lr", stage.lr)
    if stage.warmup_steps is not None:
        c.at_least(f"{key}.warmup_steps", stage.warmup_steps, 0)
    c.one_of(f"{key}.advance", stage.advance, ADVANCES)
    if stage.train == "none" and not stage.embeddings_trainable() and not stage.head_trainable():
        c.add(
            f"{key}.train",
            '"none" with head = "frozen" and frozen embeddings trains nothing; train some layers, or set head = "train"',
        )


def _operator_options(plan: Plan, c: _Checks) -> None:
    """An operator option set on a stage whose operator does not take it (operator table)."""
    seen = {key for key, _ in c.problems}
    for index, stage in enumerate(plan.stages):
        if stage.enter not in OPERATORS:
            continue
        for option, unused in OPTION_DEFAULTS.items():
            key = f"stages[{index}].{option}"
            ops = operators_with(option)
            if getattr(stage, option) == unused or stage.enter in ops or key in seen:
                continue
            names = ", ".join(f'"{op}"' for op in ops)
            hint = f', or set enter = "{ops[0]}"' if len(ops) == 1 else ""
            c.add(
                key,
                f'only applies to enter = {names}, not "{stage.enter}"; remove {option}{hint}',
            )


def _order(item: tuple[int, Problem]) -> tuple[int, int, int]:
    seq, (key, _) = item
    match = _STAGE_KEY.match(key)
    if match:
        return (1, int(match.group(1)), seq)
    if key == "stages":
        return (1, -1, seq)
    head = key.split(".", 1)[0]
    return (0, _ORDER.index(head) if head in _ORDER else len(_ORDER), seq)


def _shape_key(plan: Plan, index: int) -> tuple[int, int, int | None]:
    shape = walk_shapes(plan)[0][index]
    return shape.layers, shape.width, shape.level


def collect_problems(plan: Plan, environment: Sequence[Problem] = ()) -> list[Problem]:
    """(key path, problem) pairs for everything wrong with `plan`, in document order;
    `environment`: `check_environment(plan)`'s answer, when the caller asked it."""
    c = _Checks()
    _check_sections(plan, c, environment)
    if not plan.stages:
        c.add("stages", "no stages; add at least one [[stages]] table with name, layers and steps")
    limits = limit_problems(plan)
    if any(key.startswith("stages[") for key, _ in limits):  # too big to walk the shapes of
        return [p for _, p in sorted(enumerate(c.problems + limits), key=_order)]
    shapes, shape_problems = walk_shapes(plan)
    names: dict[str, int] = {}
    fill = fill_index(plan)
    for index, stage in enumerate(plan.stages):
        fitted = index == fill or (stage.fill and plan.budget is not None)
        _check_stage(index, stage, shapes[index].prev_layers, names, c, fitted=fitted)
    c.problems += recipe_problems(plan, shapes) + model_key_problems(plan) + limits
    # A stage whose layer count breaks its operator's rule: report the count, not its echoes.
    wrong_layers = {key[: -len(".layers")] for key, _ in shape_problems if key.endswith(".layers")}
    c.problems = [
        (k, p)
        for k, p in c.problems
        if k.rsplit(".", 1)[0] not in wrong_layers or not k.endswith(".train")
    ]
    _operator_options(plan, c)
    c.problems += advance_problems(plan) + probe_problems(
        plan, lambda p: collect_problems(p, environment), _shape_key
    )
    c.problems += distributed_problems(plan) + samples_problems(plan)
    for key, problem in budget_problems(plan):
        c.add(key, problem)
    fit = fit_budget(plan)
    if fit is not None and fit.problem is not None and not shape_problems:
        c.add(fit.problem_key, fit.problem)
    seen = {key for key, _ in c.problems}
    problems = c.problems + [(key, problem) for key, problem in shape_problems if key not in seen]
    return [p for _, p in sorted(enumerate(problems), key=_order)]


def plan_problems(
    plan: Plan,
    source: str = "<plan>",
    text: str | None = None,
    environment: Sequence[Problem] = (),
) -> list[PlanError]:
    """Every problem of `plan` as a `PlanError` ([] when valid).

    With `text` (the plan's TOML), each error carries the line of its key; `environment`:
    `check_environment(plan)`'s answer (plan/environment.py), listed with the rest.
    """
    locator = TomlLocator(text) if text is not None else None
    line: Callable[[str], int | None] = locator.line_of if locator else (lambda _key: None)
    return [
        PlanError(problem, key=key, source=source, line=line(key))
        for key, problem in collect_problems(plan, environment)
    ]


def validate_plan(
    plan: Plan,
    source: str = "<plan>",
    text: str | None = None,
    environment: Sequence[Problem] = (),
) -> None:
    """Raise the first `PlanError` of `plan` (with `environment`: of `check_environment`'s
    answer too); return None when it is valid. Reads nothing from disk."""
    problems = plan_problems(plan, source=source, text=text, environment=environment)
    if problems:
        raise problems[0]
