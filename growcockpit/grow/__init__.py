"""Growth operators and freeze policies on Hugging Face BERT / GPT-2 models.

Knows torch and transformers, never Textual or the training loop.
"""

from growcockpit.grow.freeze import FreezeResult, apply_freeze
from growcockpit.grow.model_parts import (
    embedding_modules,
    family_of,
    get_layers,
    head_parameters,
    set_layers,
)
from growcockpit.grow.stack import GrowResult, stack_layers

__all__ = [
    "FreezeResult",
    "GrowResult",
    "apply_freeze",
    "embedding_modules",
    "family_of",
    "get_layers",
    "head_parameters",
    "set_layers",
    "stack_layers",
]
