"""Growth operators and freeze policies on Hugging Face BERT / GPT-2 models.

Knows torch and transformers, never Textual or the training loop.

- `stack_layers`: depth growth by copying blocks (MSLT top / Gong bottom / random).
- `coalesce_model`, `decoalesce_model`, `interpolate_model`: the multi-level
  maps C, D and the V-cycle interpolation; `width` holds F, T,
  R, G and the head-aligned grouping.
- `apply_freeze`: which parameters train in a stage; `carry_optimizer_state`:
  Adam moments across a stage change when the optimizer is not reset.
"""

from growcockpit.families import ModelShape
from growcockpit.grow.coalesce import RECIPES, coalesce_model, model_shape
from growcockpit.grow.decoalesce import decoalesce_model
from growcockpit.grow.freeze import FreezeResult, apply_freeze, set_train_modes
from growcockpit.grow.interpolate import interpolate_model
from growcockpit.grow.model_parts import (
    embedding_modules,
    family_of,
    get_layers,
    head_parameters,
    set_layers,
)
from growcockpit.grow.optimizer_state import carry_optimizer_state
from growcockpit.grow.stack import GrowResult, stack_layers
from growcockpit.grow.width import (
    Grouping,
    averaging_matrix,
    copying_matrix,
    depth_groups,
    paired_groups,
)

__all__ = [
    "RECIPES",
    "FreezeResult",
    "GrowResult",
    "Grouping",
    "ModelShape",
    "apply_freeze",
    "averaging_matrix",
    "carry_optimizer_state",
    "coalesce_model",
    "copying_matrix",
    "decoalesce_model",
    "depth_groups",
    "embedding_modules",
    "family_of",
    "get_layers",
    "head_parameters",
    "interpolate_model",
    "model_shape",
    "paired_groups",
    "set_layers",
    "set_train_modes",
    "stack_layers",
]
