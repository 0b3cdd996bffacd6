"""The optimizer, RNG and plateau parts of a checkpoint, checked before use
(backend/state/checkpoint_checks.py checks the rest and says why).

`load_state_dict` of an optimizer checks neither the shapes nor the values of
the state it takes, and `torch.set_rng_state` of a wrong-sized tensor raises
deep inside a resume; each part is checked here on scratch objects, so a
lying checkpoint is one line and the live generators and optimizer are never
touched.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, TypeGuard

import torch

from growcockpit.backend.state.checkpoint import CheckpointError
from growcockpit.plan.limits import echo

MAX_STEP = 10**15  # a step or token count past this is not a count this tool wrote
MAX_RANKS = 65_536


def refusal(file: Path, what: str, advice: str = "") -> CheckpointError:
    return CheckpointError(
        f"{file}: {what}; "
        + (advice or "resume from an earlier checkpoint (`growcockpit resume RUN --from=step-N`)")
    )


def brief(exc: BaseException) -> str:
    """An exception's message on one line, cut: it goes inside a one-line refusal."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_plateau(state: object, file: Path) -> None:
    """The plateau trigger's state: None, or {ema, window of [tokens, ema], fired}."""
    if state is None:
        return
    bad = refusal(file, f"position.plateau is not a plateau trigger's state: {echo(state)}")
    if not isinstance(state, dict) or not set(state) <= {"ema", "window", "fired"}:
        raise bad
    ema, window = state.get("ema"), state.get("window", [])
    if ema is not None and not (is_number(ema) and math.isfinite(ema)):
        raise bad
    if not isinstance(state.get("fired", False), bool) or not isinstance(window, list):
        raise bad
    if len(window) > 1_000_001:
        raise bad
    for item in window:
        if not (isinstance(item, list | tuple) and len(item) == 2):
            raise bad
        if not (is_int(item[0]) and 0 <= item[0] <= MAX_STEP and is_number(item[1])):
            raise bad
        if not math.isfinite(item[1]):
            raise bad


def check_rng(raw: object, file: Path) -> None:
    """The generators: each torch state must load into a scratch generator (the global one is
    not touched), the Python state into a scratch `random.Random`."""
    if not isinstance(raw, dict):
        raise refusal(file, "its random state is not a table")
    states = [("rng.torch", raw.get("torch"))]
    ranks = raw.get("ranks") or []
    if not isinstance(ranks, list) or len(ranks) > MAX_RANKS:
        raise refusal(file, "its per-rank random states are not a list")
    for i, rank in enumerate(ranks):
        if not isinstance(rank, dict):
            raise refusal(file, f"rng.ranks[{i}] is not a table")
        states.append((f"rng.ranks[{i}].torch", rank.get("torch")))
        _check_cuda(rank.get("cuda"), f"rng.ranks[{i}].cuda", file)
    for key, state in states:
        try:
            if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
                raise ValueError("not a byte tensor")
            torch.Generator().set_state(state)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise refusal(file, f"{key} is not a torch random state ({brief(exc)})") from None
    _check_cuda(raw.get("cuda"), "rng.cuda", file)
    if "python" in raw:
        try:
            random.Random().setstate(raw["python"])
        except (TypeError, ValueError, OverflowError) as exc:
            raise refusal(file, f"rng.python is not a Python random state ({brief(exc)})") from None


def _check_cuda(state: object, key: str, file: Path) -> None:
    items = state if isinstance(state, list | tuple) else [state]
    for item in items[:1024] if len(items) <= 1024 else [object()]:
        if item is not None and not (
            isinstance(item, torch.Tensor) and item.dtype == torch.uint8 and item.numel() <= 1 << 16
        ):
            raise refusal(file, f"{key} is not a CUDA random state")


def check_optimizer(raw: object, file: Path) -> None:
    """The optimizer state's structure: finite numbers, tensors per parameter index
    (their shapes are matched against the parameters in `check_optimizer_params`)."""
    if raw is None:
        return
    if not isinstance(raw, dict) or not isinstance(raw.get("state"), dict):
        raise refusal(file, "its optimizer state is not an optimizer's state dict")
    groups = raw.get("param_groups")
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups
    ):
        raise refusal(file, "its optimizer state has no parameter groups")
    for g in groups:
        for key, value in g.items():
            numbers = value if isinstance(value, list | tuple) and key != "params" else [value]
            for v in numbers:
                if is_number(v) and not math.isfinite(v):
                    raise refusal(file, f"optimizer setting {key} is {v}")
    for index, slots in raw["state"].items():
        if not is_int(index) or not isinstance(slots, dict):
            raise refusal(file, f"optimizer state {echo(index)} is not a parameter's state")


def check_optimizer_params(
    raw: dict[str, Any], groups: list[list[torch.Tensor]], file: Path
) -> None:
    """Saved optimizer state against the optimizer it is loaded into: the same groups, and
    every per-parameter tensor of exactly its parameter's shape (load_state_dict checks
    neither the shapes nor the sizes of the state it takes)."""
    saved = raw["param_groups"]
    sizes = [len(g["params"]) for g in saved]
    if sizes != [len(g) for g in groups]:
        raise refusal(
            file,
            f"its optimizer holds parameter groups of {sizes} but the stage trains {[len(g) for g in groups]}",
        )
    params = {
        int(index): p
        for g_saved, g in zip(saved, groups, strict=True)
        for index, p in zip(g_saved["params"], g, strict=True)
    }
    for index, slots in raw["state"].items():
        param = params.get(index)
        if param is None:
            raise refusal(file, f"optimizer state {index} is for no parameter")
        for slot, value in slots.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != param.shape:
                raise refusal(
                    file,
                    f"optimizer state {slot} of parameter {index} is {tuple(value.shape)}, "
                    f"its parameter {tuple(param.shape)}",
                )
            if (
                isinstance(value, torch.Tensor)
                and value.dim() == 0
                and not bool(torch.isfinite(value))
            ):
                raise refusal(file, f"optimizer state {slot} of parameter {index} is not finite")
