"""Building a model of a registered family from a plan, with no download."""

from __future__ import annotations

from typing import Any

from torch import nn
from transformers import PreTrainedTokenizerBase

from growcockpit.families import spec_for
from growcockpit.plan.types import ModelSpec


def build_model(spec: ModelSpec, layers: int, tokenizer: PreTrainedTokenizerBase) -> nn.Module:
    """A freshly initialised model of `layers` blocks at the plan's full width.

    Attention is SDPA: the staged forward calls blocks without a mask and
    relies on SDPA's `is_causal` for decoders (eager attention would not be causal).
    """
    return spec_for(spec.family).build(spec, layers, tokenizer)


def model_from_saved(
    model_type: type[nn.Module],
    config_type: Any,
    config: dict[str, Any],
    state: dict[str, Any] | None,
) -> nn.Module:
    """A model rebuilt from a checkpoint's config dict and weights, with SDPA attention as
    `build_model` gives it (checkpoints and V-cycle level snapshots). `state` None: the
    weights come later (a sharded checkpoint's, backend/state/fsdp_checkpoint.py)."""
    cfg = config_type.from_dict(config)
    cfg._attn_implementation = "sdpa"
    model = model_type(cfg)
    if state is not None:
        model.load_state_dict(state)
    return model
