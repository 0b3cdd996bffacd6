"""A checkpoint's contents, checked before any of it is used.

`weights_only` loading keeps a crafted `state.pt` from running code, but what it
holds can still lie: a saved config that builds a 17 GB model, a position that
is a string, weights of the wrong shape or NaN, a thread count of a million.
Run directories are copied between people and machines, so each part is checked
against the plan saved beside it (which itself goes through the same validation
and size caps as a plan file) before anything is allocated or adopted:

- position: every field of the right type and range, and consistent with its plan;
- config: the family's config, at exactly the shape the plan trains at that position;
- weights (and V-cycle snapshots): exactly the tensors a model of that config has
  (built on the meta device, so a lying config costs nothing), all finite;
- optimizer, RNG, plateau state: the structure `save_checkpoint` writes, finite, of
  sane sizes (backend/state/state_checks.py).

A refusal is a CheckpointError with one line naming the file, what is wrong and
what to do; for non-finite weights it names the last finite checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.backend.state.checkpoint import (
    CheckpointError,
    TrainerPosition,
    load_checkpoint,
    non_finite_problem,
)
from growcockpit.backend.state.finite_scan import first_non_finite
from growcockpit.backend.state.shard_checks import check_shards
from growcockpit.backend.state.state_checks import (
    MAX_STEP,
    brief,
    check_optimizer,
    check_plateau,
    check_rng,
    is_int,
    is_number,
    refusal,
)
from growcockpit.families import spec_for
from growcockpit.families.spec import FamilySpec
from growcockpit.plan import PlanError, plan_from_dict, resolve_shapes, validate_plan
from growcockpit.plan.init_from import without_init_from
from growcockpit.plan.limits import MAX_VOCAB, STAGE_CEILINGS, echo
from growcockpit.plan.types import Plan

MAX_THREADS = 4096
LR_SCALE_RANGE = (1e-12, 1e12)  # set_lr's 1e-3..1e3 applied a few times over
MAX_CONFIG_KEYS = 500
ENTER_REASONS = ("init", "steps", "command", "plateau")
_INT_FIELDS = ("stage_index", "step", "step_in_stage", "tokens", "cpu_threads")
_REQUIRED = ("stage_index", "step", "plan")


@dataclass
class CheckedState:
    """A checkpoint's position and plan, every part of it checked."""

    pos: TrainerPosition
    plan: Plan
    family: FamilySpec


def check_position(raw: object, file: Path) -> TrainerPosition:
    """The position dict as a TrainerPosition, each field type- and range-checked."""
    if not isinstance(raw, dict):
        raise refusal(file, f"its position is {type(raw).__name__}, not a table")
    known = {f.name for f in fields(TrainerPosition)}
    for key in raw:
        if key not in known:
            raise refusal(file, f"its position has an unknown field {echo(key)}")
    for key in _REQUIRED:
        if key not in raw:
            raise refusal(file, f"its position has no {key}")
    for key in _INT_FIELDS:
        if key in raw:
            value = raw[key]
            ceiling = MAX_THREADS if key == "cpu_threads" else MAX_STEP
            if not is_int(value) or not 0 <= value <= ceiling:
                raise refusal(
                    file,
                    f"position.{key} must be a whole number from 0 to {ceiling:,}, got {echo(value)}",
                )
    scale = raw.get("lr_scale", 1.0)
    low, high = LR_SCALE_RANGE
    if not is_number(scale) or not math.isfinite(scale) or not low <= scale <= high:
        raise refusal(
            file, f"position.lr_scale must be from {low:g} to {high:g}, got {echo(scale)}"
        )
    if not isinstance(raw.get("stage_entered", False), bool):
        raise refusal(
            file, f"position.stage_entered must be true or false, got {echo(raw['stage_entered'])}"
        )
    gated = raw.get("gated_layers", [])
    layers = STAGE_CEILINGS["layers"]
    if (
        not isinstance(gated, list)
        or len(gated) > layers
        or not all(is_int(i) and 0 <= i < layers for i in gated)
    ):
        raise refusal(file, f"position.gated_layers must be block indexes, got {echo(gated)}")
    if raw.get("enter_reason", "init") not in ENTER_REASONS:
        raise refusal(
            file,
            f"position.enter_reason must be one of {ENTER_REASONS}, got {echo(raw['enter_reason'])}",
        )
    check_plateau(raw.get("plateau"), file)
    if not isinstance(raw["plan"], dict):
        raise refusal(file, f"its saved plan is {type(raw['plan']).__name__}, not a table")
    return TrainerPosition(**{**raw, "lr_scale": float(scale), "gated_layers": list(gated)})


def check_plan(pos: TrainerPosition, file: Path) -> Plan:
    """The saved plan, through a plan file's caps and validation, and the position within it."""
    source = str(file)
    try:
        plan = plan_from_dict(pos.plan, source=f"{source} (its saved plan)", validate=False)
        validate_plan(without_init_from(plan), source=f"{source} (its saved plan)")
    except PlanError as exc:
        raise CheckpointError(
            f"{exc}; resume from an earlier checkpoint (`growcockpit resume RUN --from=step-N`)"
        ) from None
    count = len(plan.stages)
    if pos.stage_index >= count:
        raise refusal(
            file, f"position.stage_index is {pos.stage_index} but its plan has {count} stage(s)"
        )
    steps = plan.stages[pos.stage_index].steps
    if pos.step_in_stage > steps:
        raise refusal(
            file,
            f"position.step_in_stage is {pos.step_in_stage} but stage {pos.stage_index + 1} "
            f"has {steps} steps",
        )
    if not pos.step_in_stage <= pos.step <= plan.total_steps:
        raise refusal(
            file,
            f"position.step is {pos.step}: not from step_in_stage ({pos.step_in_stage}) to "
            f"the plan's {plan.total_steps} steps",
        )
    return plan


def expected_shape(plan: Plan, pos: TrainerPosition) -> tuple[int, int, int, int]:
    """(layers, hidden, heads, ffn) of the model at `pos`: after the stage's operator
    when it was entered, else the previous stage's (stage 1's initial model at full width)."""
    at = pos.stage_index if pos.stage_entered else pos.stage_index - 1
    if at < 0:
        m = plan.model
        return plan.stages[0].layers, m.hidden_size, m.num_heads, m.intermediate_size
    s = resolve_shapes(plan)[at]
    return s.layers, s.width, s.heads, s.intermediate


def _plain(value: object, depth: int = 0) -> bool:
    """JSON-like data of bounded depth and size: what `PretrainedConfig.to_dict` gives."""
    if value is None or isinstance(value, bool | int | str):
        return not isinstance(value, str) or len(value) <= 10_000
    if isinstance(value, float):
        return True
    if depth >= 4:
        return False
    if isinstance(value, list | tuple):
        return len(value) <= 1_000 and all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return len(value) <= MAX_CONFIG_KEYS and all(
            isinstance(k, str | int) and _plain(v, depth + 1) for k, v in value.items()
        )
    return False


def _shape_text(shape: tuple[int, int, int, int]) -> str:
    layers, hidden, heads, ffn = shape
    return f"{layers} layers × hidden {hidden} ({heads} heads, FFN {ffn})"


def check_config(
    raw: object,
    family: FamilySpec,
    want: tuple[int, int, int, int],
    file: Path,
    what: str,
    where: str,
) -> Any:
    """The family's config object from `raw`, which must be at exactly the shape `want`."""
    if not isinstance(raw, dict) or not _plain(raw):
        raise refusal(file, f"its {what} is not a model config")
    model_type = family.config_class.model_type
    if raw.get("model_type") != model_type:
        raise refusal(
            file,
            f"its {what} is for {echo(raw.get('model_type'))}, but its plan trains {family.name}",
        )
    vocab = raw.get("vocab_size")
    if not is_int(vocab) or not 1 <= vocab <= MAX_VOCAB:
        raise refusal(
            file, f"its {what} has vocab_size {echo(vocab)}; at most {MAX_VOCAB:,} (MAX_VOCAB)"
        )
    try:
        config = family.config_class.from_dict(dict(raw))
        got = family.shape(config)
    except Exception as exc:  # a value of the wrong type in any of the config's own checks
        raise refusal(
            file, f"its {what} is not a valid {family.name} config ({brief(exc)})"
        ) from None
    shape = (got.layers, got.hidden, got.heads, got.ffn)
    if shape != want:
        raise refusal(
            file,
            f"its {what} says {_shape_text(shape)}, but its plan has {_shape_text(want)} {where}",
        )
    config._attn_implementation = "sdpa"
    return config


def check_weights(raw: object, family: FamilySpec, config: Any, file: Path, what: str) -> None:
    """`raw` holds exactly the tensors a model of `config` has, each of its shape and dtype.

    The reference model is built on the meta device: no memory, whatever the config says.
    """
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in raw.items()
    ):
        raise refusal(file, f"its {what} is not a table of tensors")
    want = _reference(family, config, file, what)
    for name in want:
        if name not in raw:
            raise refusal(file, f"its {what} has no tensor {echo(name)}")
    for name, tensor in raw.items():
        ref = want.get(name)
        if ref is None:
            raise refusal(file, f"its {what} has a tensor {echo(name)} its model does not have")
        if tensor.shape != ref.shape or tensor.dtype != ref.dtype:
            raise refusal(
                file,
                f"its {what} tensor {name} is {tuple(tensor.shape)} {tensor.dtype}, but its "
                f"config's model has {tuple(ref.shape)} {ref.dtype}",
            )


def _reference(family: FamilySpec, config: Any, file: Path, what: str) -> dict[str, torch.Tensor]:
    """The state dict of a model of `config`, built on the meta device (no memory)."""
    try:
        with torch.device("meta"):
            reference: nn.Module = family.model_class(config)
    except Exception as exc:
        raise refusal(file, f"its {what} config cannot build a model ({brief(exc)})") from None
    return reference.state_dict()


def check_levels(
    raw: object, plan: Plan, pos: TrainerPosition, family: FamilySpec, file: Path
) -> None:
    """The V-cycle snapshots: one per open level, each at the shape its coalesce stage left."""
    from growcockpit.backend.state.levels import open_levels_at

    open_levels = open_levels_at(plan, pos.stage_index, pos.stage_entered)
    if not isinstance(raw, list) or len(raw) > len(open_levels):
        count = len(raw) if isinstance(raw, list) else echo(raw)
        raise refusal(
            file, f"it holds {count} V-cycle snapshot(s) where its plan has {len(open_levels)} open"
        )
    shapes = resolve_shapes(plan)
    for i, level in enumerate(raw):
        if not isinstance(level, dict) or not {
            "config",
            "state",
            "layers",
            "width",
            "pairing",
        } <= set(level):
            raise refusal(file, f"V-cycle snapshot {i + 1} is not a snapshot")
        stage = level.get("stage", open_levels[i])
        if not is_int(stage) or stage not in open_levels or stage < 1:
            raise refusal(
                file, f"V-cycle snapshot {i + 1} is for stage {echo(stage)}, which is not open"
            )
        prev = shapes[stage - 1]
        want = (prev.layers, prev.width, prev.heads, prev.intermediate)
        if (level["layers"], level["width"]) != want[:2] or not isinstance(level["pairing"], str):
            raise refusal(
                file,
                f"V-cycle snapshot {i + 1} says {echo(level['layers'])} layers at width {echo(level['width'])}, not {want[0]} at {want[1]}",
            )
        what = f"V-cycle snapshot {i + 1}"
        config = check_config(
            level["config"], family, want, file, what, f"before stage {stage + 1}"
        )
        check_weights(level["state"], family, config, file, what)


def check_state(state: dict[str, Any], path: Path) -> CheckedState:
    """Every part of a loaded checkpoint (see the module docstring); CheckpointError if one lies."""
    file = path / "state.pt"
    pos = check_position(state["position"], file)
    if path.name.startswith("step-") and path.name[5:] != str(pos.step):
        raise refusal(file, f"position.step is {pos.step} in a directory named {path.name}")
    plan = check_plan(pos, file)
    family = spec_for(plan.model.family)
    where = f"at stage {pos.stage_index + 1}" + ("" if pos.stage_entered else " (before it starts)")
    config = check_config(state["config"], family, expected_shape(plan, pos), file, "config", where)
    if state.get("shards"):  # FSDP: the weights are in shards/, checked by their index
        check_shards(path, _reference(family, config, file, "weights"), plan)
    else:
        check_weights(state["model"], family, config, file, "weights")
    check_levels(state.get("levels", []), plan, pos, family, file)
    check_optimizer(state.get("optimizer"), file)
    problem = non_finite_problem(state, None) or _levels_non_finite(state.get("levels", []))
    if problem:
        raise refusal(file, f"{problem} (NaN or inf)", last_finite_advice(path))
    check_rng(state["rng"], file)
    return CheckedState(pos, plan, family)


def _levels_non_finite(levels: list[dict[str, Any]]) -> str:
    named = [
        (f"V-cycle snapshot {i + 1} weight {name}", tensor)
        for i, level in enumerate(levels)
        for name, tensor in level["state"].items()
    ]
    culprit = first_non_finite(named)
    return f"{culprit} is not finite" if culprit else ""


def last_finite_advice(path: Path) -> str:
    """What to resume from instead of a non-finite checkpoint: the newest older one whose
    weights are finite (each looked at through mmap, nothing else loaded)."""
    from growcockpit.backend.state.checkpoint_dirs import checkpoint_dirs, step_of

    run = path.parent.parent
    try:
        step = int(path.name[5:])
    except ValueError:
        step = MAX_STEP
    for older in reversed([p for p in checkpoint_dirs(path.parent) if step_of(p) < step]):
        try:
            other = load_checkpoint(older, mmap=True)
            model = other["model"]
            if isinstance(model, dict) and not non_finite_problem(
                {"model": model, "optimizer": None}, None
            ):
                return (
                    f"the last finite checkpoint is {older.name}: "
                    f"`growcockpit resume {run} --from={older.name}` (or `rollback {step_of(older)}`)"
                )
        except (CheckpointError, AttributeError, TypeError):
            continue
    return "no earlier checkpoint is finite either; start a new run with `growcockpit train`"
