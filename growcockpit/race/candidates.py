"""What a race trains: the plans given × their variations, plus the full-depth baseline.

Every candidate is written out as an ordinary plan file under `<race>/plans/` and
trained as an ordinary run directory under `<race>/runs/`, one per seed, so each can be
attached, resumed and compared like any other run. The race's description (`race.json`)
is what a re-run or another worker reads back, so a race resumes with exactly the
candidates and rungs it started with.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from growcockpit.compare.comparable import mismatches
from growcockpit.plan import Plan, PlanError, dump_plan, estimate_cost, plan_from_dict
from growcockpit.plan.environment import check_environment
from growcockpit.plan.flops import plan_flops
from growcockpit.plan.overrides import apply_overrides, overridden_plan, parse_override
from growcockpit.plan.save import plan_to_dict, update_text
from growcockpit.race.control import ControlError, control_tables
from growcockpit.race.depth_controls import DepthControlError, depth_control_plans
from growcockpit.race.halving import rung_computes
from growcockpit.race.race_dir import PLANS, make_root, plan_path, run_path, subdir, write_file
from growcockpit.race.race_dir import SPEC_FILE as SPEC_FILE  # re-exported: its home was here
from growcockpit.race.short_controls import short_control_tables, short_fractions

BASELINE_STAGE = "full-depth"
Made = tuple[str, str, list[str], bool, Plan, str]  # label, name, sets, baseline, plan, text


class RaceError(Exception):
    """A race that cannot be built or run: one line, the place and the fix."""


@dataclass(frozen=True)
class Candidate:
    """One plan at one choice of the varied keys; `runs` are its run directories (one per seed)."""

    key: str
    plan_name: str
    sets: list[str]
    baseline: bool
    plan_files: list[str]  # one per seed
    runs: list[str]
    control: bool = False  # `--control`: a growth plan's trainable set, no growth
    controls: list[str] = field(default_factory=list)  # a control's growth candidates' keys
    depth: int = 0  # a fixed-size control's depth (race/depth_controls.py); 0: not one
    short: float = 0.0  # a short-schedule control's share of the baseline's steps; 0: not one


@dataclass
class RaceSpec:
    """A race as started: candidates, rungs (FLOPs), and the full budget they are fractions of."""

    candidates: list[Candidate]
    seeds: list[int]
    eta: int
    keep: int
    budget_fraction: float
    budget_flops: float
    rungs: list[float]
    finish: bool = True  # continue the winners to the full budget
    vary: list[str] = field(default_factory=list)
    control: bool = False
    depth_controls: bool = False  # fixed-size controls race too (build_race's default: on)
    short_controls: bool = False  # full@0.5, full@0.25 race too (build_race's default: on)
    metric: str = "val_loss"  # what the winner's claim is measured on (val_loss, accuracy)
    target_value: float | None = None  # its target (None: the baseline's loss at the rung)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @staticmethod
    def from_json(text: str) -> RaceSpec:
        """Trusts `text`: a race directory's race.json is read with spec_file.load_spec."""
        data = json.loads(text)
        data["candidates"] = [Candidate(**c) for c in data["candidates"]]
        return RaceSpec(**data)


def parse_vary(text: str) -> tuple[str, list[str]]:
    """`optim.lr=1e-3,2e-3` → ("optim.lr", ["1e-3", "2e-3"]); the key checked like `--set`."""
    key, eq, values = text.partition("=")
    choices = [v.strip() for v in values.split(",") if v.strip()]
    if not eq or not choices:
        raise RaceError(f"--vary {text[:80]}: expected KEY=V1,V2,..., e.g. optim.lr=1e-3,2e-3")
    try:
        for value in choices:
            parse_override(f"{key.strip()}={value}")
    except PlanError as exc:
        raise RaceError(f"--vary {text[:80]}: {exc.problem}") from None
    return key.strip(), choices


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)[:60] or "x"


def _variations(varies: list[tuple[str, list[str]]]) -> list[list[str]]:
    if not varies:
        return [[]]
    keys = [k for k, _ in varies]
    return [
        [f"{k}={v}" for k, v in zip(keys, combo, strict=True)]
        for combo in itertools.product(*(vals for _, vals in varies))
    ]


def _label(name: str, sets: list[str]) -> str:
    tail = "".join(f"-{s.split('=')[0].split('.')[-1]}{s.split('=', 1)[1]}" for s in sets)
    return _slug(name + tail)


def _raw(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text), text
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RaceError(f"{path}: cannot read the plan ({exc})") from None


def is_full_depth(plan: Plan) -> bool:
    """A single-stage plan trains the final model at full depth: it is a baseline itself."""
    stage = plan.stages[0]
    return len(plan.stages) == 1 and stage.layers == plan.model.final_layers


def baseline_tables(data: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """The first plan's model trained at full depth for the same compute: with a [budget],
    one fill stage (fitted to it); without, as many steps as the plan's estimated cost."""
    out = {k: v for k, v in data.items() if k != "stages"}
    out["name"] = f"{plan.name}-{BASELINE_STAGE}"
    stage: dict[str, Any] = {
        "name": BASELINE_STAGE,
        "layers": plan.model.final_layers,
        "enter": "init",
        "train": "all",
    }
    if plan.budget is not None:
        stage["fill"] = True
    else:
        cost = estimate_cost(plan)
        stage["steps"] = max(1, round(cost.total / cost.baseline_step_cost))
    out["stages"] = [stage]
    return out


def _write(path: Path, text: str, write: bool) -> str:
    """A candidate's plan file in `<race>/plans/`, never written through a planted link."""
    if write:
        make_root(path.parent.parent)
        subdir(path.parent.parent, PLANS)
        write_file(path, text.encode("utf-8"))
    return str(path)


def _which_flag(message: str, fixed: tuple[str, ...]) -> str:
    """An override's error names `--set`; one that came from a --vary choice says so."""
    if any(f"--set {item}" in message for item in fixed):
        return message
    return message.replace("--set ", "--vary ", 1)


def build_race(
    plan_paths: list[Path],
    vary: list[str],
    seeds: list[int],
    race_dir: Path,
    *,
    budget_fraction: float,
    eta: int = 2,
    keep: int = 1,
    finish: bool = True,
    control: bool = False,
    depth_controls: bool = True,
    short_controls: bool = True,
    metric: str = "val_loss",
    target_value: float | None = None,
    write: bool = True,
    fixed: tuple[str, ...] = (),
) -> RaceSpec:
    """Every candidate's plan, checked and (with `write`) written under `race_dir/plans/`;
    the rungs. With `control`, each growth candidate's control (race/control.py) too;
    with `depth_controls`, the fixed-size controls (race/depth_controls.py); with
    `short_controls`, the baseline's model on ½ and ¼ of its steps (race/short_controls.py).
    `fixed`: `--set KEY=VALUE` overrides every candidate (and the baseline) shares."""
    if not plan_paths:
        raise RaceError("give at least one plan file")
    if not 0 < budget_fraction <= 1:
        raise RaceError(f"--budget-fraction {budget_fraction}: give a fraction in (0, 1]")
    varies = [parse_vary(v) for v in vary]
    made: list[Made] = []
    first: tuple[dict[str, Any], Plan] | None = None
    grown: list[tuple[int, dict[str, Any]]] = []  # growth candidates and their tables
    for path in plan_paths:
        data, text = _raw(path)
        for choice in _variations(varies):
            sets = [*fixed, *choice]
            try:
                plan = overridden_plan(data, sets, str(path), text, check_environment)
            except PlanError as exc:  # a choice of a --vary, or a --set
                raise RaceError(_which_flag(str(exc), fixed)) from None
            if plan.metrics.eval_every_steps <= 0:
                raise RaceError(
                    f"{path}: metrics.eval_every_steps: a race measures validation loss; "
                    "set it in the plan or with --set metrics.eval_every_steps=50"
                )
            made.append(
                (_label(plan.name, choice), plan.name, sets, is_full_depth(plan), plan, text)
            )
            if control and not is_full_depth(plan):
                grown.append((len(made) - 1, apply_overrides(data, map(parse_override, sets))))
            if first is None:
                first = (data, plan)
    assert first is not None
    base_sets: list[list[str]] = []  # the choices of the non-stage keys
    for choice in _variations(varies):
        kept = [s for s in [*fixed, *choice] if not s.startswith("stages.")]
        if kept not in base_sets:
            base_sets.append(kept)
    if not any(m[3] for m in made):  # the baseline, at the same choices of the other keys
        base = baseline_tables(*first)
        for sets in base_sets:
            try:
                plan = plan_from_dict(apply_overrides(base, [parse_override(s) for s in sets]))
            except PlanError as exc:
                raise RaceError(f"the full-depth baseline: {exc}") from None
            label = _label(plan.name, [s for s in sets if s not in fixed])
            made.append((label, plan.name, sets, True, plan, dump_plan(plan)))
    budget = plan_flops(made[0][4])  # the first plan's; the baseline costs the same
    depths = _depth_controls(first, base_sets, budget, fixed) if depth_controls else []
    made += [m for m, _ in depths]
    at_plan = {round(plan_flops(m[4]) / budget, 2) for m in made if not m[3]}  # full@plan
    shares = sorted({*short_fractions(), *(f for f in at_plan if 0.05 <= f < 0.95)}, reverse=True)
    shorts = _short_controls(first, base_sets, fixed, shares) if short_controls else []
    made += [m for m, _ in shorts]
    _refuse_incomparable(made)
    controls = _controls(made, grown)
    made += [m for m, _ in controls]
    labels = [m[0] for m in made]
    candidates: list[Candidate] = []
    for i, (label, name, sets, is_base, plan, text) in enumerate(made):
        key = label if labels.count(label) == 1 else f"{label}-{i}"
        files: list[str] = []
        runs: list[str] = []
        for seed in seeds:
            seeded = update_text(text, dataclasses.replace(plan, seed=seed))
            files.append(_write(plan_path(race_dir, key, seed), seeded, write))
            runs.append(str(run_path(race_dir, key, seed)))
        candidates.append(Candidate(key, name, sets, is_base, files, runs))
    for at, (_, of) in enumerate(controls, start=len(made) - len(controls)):
        keys = [candidates[i].key for i in of]
        candidates[at] = dataclasses.replace(candidates[at], control=True, controls=keys)
    start = len(made) - len(controls) - len(shorts) - len(depths)
    for at, (_, depth) in enumerate(depths, start=start):
        candidates[at] = dataclasses.replace(candidates[at], depth=depth)
    for at, (_, share) in enumerate(shorts, start=start + len(depths)):
        candidates[at] = dataclasses.replace(candidates[at], short=share)
    rungs = rung_computes(len(candidates), eta, keep, budget_fraction * budget)
    if not rungs:
        raise RaceError(f"{len(candidates)} candidate(s) and --keep {keep}: nothing to race")
    return RaceSpec(
        candidates,
        seeds,
        eta,
        keep,
        budget_fraction,
        budget,
        rungs,
        finish,
        vary,
        control,
        depth_controls,
        short_controls,
        metric,
        target_value,
    )


def _depth_controls(
    first: tuple[dict[str, Any], Plan],
    base_sets: list[list[str]],
    budget: float,
    fixed: tuple[str, ...] = (),
) -> list[tuple[Made, int]]:
    """The fixed-size controls of the first plan's model at every choice of the non-stage
    keys, each at the first plan's compute (race/depth_controls.py)."""
    out: list[tuple[Made, int]] = []
    for sets in base_sets:
        data = apply_overrides(first[0], [parse_override(s) for s in sets])
        try:
            plan = plan_from_dict(data)
            for depth, tables in depth_control_plans(data, plan, budget, plan_flops):
                ctl = plan_from_dict(tables)
                label = _label(ctl.name, [s for s in sets if s not in fixed])
                made = (label, ctl.name, sets, False, ctl, dump_plan(ctl))
                out.append((made, depth))
        except (PlanError, DepthControlError) as exc:
            raise RaceError(
                f"the fixed-size controls: {exc}; or race with --no-depth-controls"
            ) from None
    return out


def _short_controls(
    first: tuple[dict[str, Any], Plan],
    base_sets: list[list[str]],
    fixed: tuple[str, ...],
    shares: list[float],
) -> list[tuple[Made, float]]:
    """The baseline's model on ½ and ¼ of its steps (and at a growth plan's own compute
    where that is less: full@plan), its schedule completed over them, at every choice of
    the non-stage keys (race/short_controls.py)."""
    out: list[tuple[Made, float]] = []
    for sets in base_sets:
        try:
            base = apply_overrides(baseline_tables(*first), [parse_override(s) for s in sets])
            plan = plan_from_dict(base)
            for share in shares:
                ctl = plan_from_dict(short_control_tables(base, plan, share))
                label = _label(ctl.name, [s for s in sets if s not in fixed])
                out.append(((label, ctl.name, sets, False, ctl, dump_plan(ctl)), share))
        except PlanError as exc:
            raise RaceError(
                f"the short-schedule controls: {exc}; or race with --no-short-controls"
            ) from None
    return out


def _refuse_incomparable(made: list[Made]) -> None:
    """Every candidate's loss must measure what the first one's does: a rung ranks them."""
    first = plan_to_dict(made[0][4])
    for label, _, sets, _, plan, _ in made[1:]:
        found = mismatches(plan_to_dict(plan), first)
        if found:
            facts = "; ".join(m.text for m in found)
            how = f" (with {' '.join(sets)})" if sets else ""
            raise RaceError(
                f"{label}{how} measures another validation loss than {made[0][0]} ({facts}); "
                "race plans that share family, tokenizer, data, validation split and sequence "
                "length, and race the others separately"
            )


def _controls(
    made: list[Made], grown: list[tuple[int, dict[str, Any]]]
) -> list[tuple[Made, list[int]]]:
    """One control per distinct control plan, with the growth candidates it controls; its
    choices are the non-stage ones (the stages are the control's own)."""
    out: list[tuple[Made, list[int]]] = []
    for index, data in grown:
        label, _, sets, _, plan, _ = made[index]
        try:
            tables = control_tables(data, plan)
            if tables is None:
                continue
            ctl = plan_from_dict(tables)
        except ControlError as exc:
            raise RaceError(str(exc)) from None
        except PlanError as exc:
            raise RaceError(f"--control: {label}'s control: {exc}") from None
        text = dump_plan(ctl)
        same = next((o for m, o in out if m[5] == text), None)
        if same is not None:
            same.append(index)
            continue
        kept = [s for s in sets if not s.startswith("stages.")]
        out.append(((_label(ctl.name, kept), ctl.name, kept, False, ctl, text), [index]))
    return out
