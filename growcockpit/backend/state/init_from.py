"""The model stage 1 starts from: fresh weights, or a trained model (`model.init_from`).

A trained model comes with its own tokenizer: its embedding rows only mean
something for those ids, so when the plan would train a new vocabulary
("train:<vocab>") the source's tokenizer is used instead. A plan that names a
tokenizer path or hub name keeps it, and its size must match the model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from growcockpit.backend.data.corpus import DataError
from growcockpit.backend.model import build_model
from growcockpit.backend.state.source_weights import SourceWeightsError, check_source_weights
from growcockpit.families import spec_for
from growcockpit.families.spec import FamilySpec
from growcockpit.plan.init_from import (
    KEY,
    SourceError,
    init_from_problems,
    read_source,
    tokenizer_used,
)
from growcockpit.plan.types import DataSpec, Plan


def data_spec_for(plan: Plan) -> DataSpec:
    """The plan's data spec, with the init_from model's tokenizer when the plan would train one."""
    used = tokenizer_used(plan)
    return (
        plan.data if used == plan.data.tokenizer else dataclasses.replace(plan.data, tokenizer=used)
    )


def initial_model(
    plan: Plan, tokenizer: PreTrainedTokenizerBase, read_weights: bool = True
) -> tuple[nn.Module, list[str]]:
    """Stage 1's model and notes worth a warning (weights the source did not have).

    `read_weights` False (FSDP ranks > 0): the source's model allocated but neither read
    nor initialised; rank 0's weights reach it when it is first sharded (backend/parallel/fsdp.py
    `sharded_root`), so only rank 0 reads the source's files.
    Raises DataError with a one-line message when the source does not fit.
    """
    first_layers = plan.stages[0].layers
    path = plan.model.init_from
    if path is None:
        return build_model(plan.model, first_layers, tokenizer), []
    problems = init_from_problems(plan)
    if problems:  # every mismatch at once, as `plan validate` lists them
        raise DataError("; ".join(f"{key}: {problem}" for key, problem in problems))
    try:  # `train` checked this before the run directory existed; any other caller here
        check_source_weights(plan)
    except SourceWeightsError as exc:
        raise DataError(str(exc)) from None
    try:
        source = read_source(path)
    except SourceError as exc:  # pragma: no cover - init_from_problems saw it first
        raise DataError(f"{KEY}: {exc}") from None
    if source.vocab_size != len(tokenizer):
        raise DataError(
            f"{KEY}: the model has a vocabulary of {source.vocab_size} but the tokenizer has "
            f'{len(tokenizer)} tokens; leave data.tokenizer as "train:…" to use the model\'s '
            "own tokenizer, or point data.tokenizer at it"
        )
    family = spec_for(plan.model.family)
    # the plan's dropout replaces the source's: dropout is a training choice, not part of the model
    overrides = {key: plan.model.dropout for key in family.dropout_keys}
    if not read_weights:
        return _unread_model(family, path, overrides), []
    try:
        model, info = family.model_class.from_pretrained(  # type: ignore[attr-defined]
            str(Path(path).expanduser()),
            attn_implementation="sdpa",
            output_loading_info=True,
            use_safetensors=True,  # never a pickle (plan/init_from.py refuses one at validate)
            **overrides,
        )
    except (OSError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{KEY}: cannot load the weights in {path} ({first})") from None
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    notes = []
    if missing:
        shown = ", ".join(sorted(missing)[:3]) + (" …" if len(missing) > 3 else "")
        notes.append(f"{KEY}: {len(missing)} weight(s) not in {path} start fresh: {shown}")
    return model, notes


def _unread_model(family: FamilySpec, path: str, overrides: dict[str, float]) -> nn.Module:
    """The source's model, its memory allocated but not written (built on the meta device)."""
    try:
        config = family.config_class.from_pretrained(str(Path(path).expanduser()))
    except (OSError, ValueError) as exc:  # pragma: no cover - read_source read it first
        raise DataError(f"{KEY}: cannot read the config in {path} ({exc})") from None
    for key, value in overrides.items():
        setattr(config, key, value)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model: nn.Module = family.model_class(config)
    model = model.to_empty(device="cpu")
    model.tie_weights()  # type: ignore[operator]  # to_empty makes each tied weight anew
    return model
