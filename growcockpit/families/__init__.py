"""The registry of model families: one `FamilySpec` per name (torch half) beside
the plan layer's `FamilyFacts` row of the same name (`plan/families.py`).

Adding a family: a module with its `FamilySpec` subclass, one row below, one
row in `plan/families.py`, and the family-parametrised tests pick it up.
"""

from __future__ import annotations

from torch import nn

from growcockpit.families.bert import BertSpec
from growcockpit.families.gpt2 import GPT2Spec
from growcockpit.families.llama import LlamaSpec
from growcockpit.families.spec import BlockCall, FamilySpec, ModelShape, TensorRule
from growcockpit.plan.families import FAMILIES, UnknownFamily
from growcockpit.protocol.safe_text import quoted

FAMILY_SPECS: dict[str, FamilySpec] = {
    spec.name: spec for spec in (BertSpec(), GPT2Spec(), LlamaSpec())
}
assert tuple(FAMILY_SPECS) == FAMILIES, "plan/families.py and the torch registry must agree"


def spec_for(name: str) -> FamilySpec:
    """The spec registered as `name`; raises UnknownFamily naming the registered ones."""
    try:
        return FAMILY_SPECS[name]
    except KeyError:
        raise UnknownFamily(
            f'unknown model family "{name}"; one of {", ".join(FAMILY_SPECS)}'
        ) from None


def spec_of(model: nn.Module) -> FamilySpec:
    """The spec of a transformers model, by its config's `model_type`."""
    model_type = getattr(getattr(model, "config", None), "model_type", "")
    spec = FAMILY_SPECS.get(str(model_type))
    if spec is None:
        raise TypeError(
            f"unsupported model type {quoted(model_type)}: growcockpit handles {', '.join(FAMILY_SPECS)}"
        )
    return spec


__all__ = [
    "FAMILY_SPECS",
    "BlockCall",
    "FamilySpec",
    "ModelShape",
    "TensorRule",
    "spec_for",
    "spec_of",
]
