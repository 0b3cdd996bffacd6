"""The registry of model families: one `FamilySpec` per name (torch half) beside
the plan layer's `FamilyFacts` row of the same name (`plan/families.py`).

Adding a family: a module with its `FamilySpec` subclass, one row in `REGISTERED`
below, one row in `plan/families.py`, and the family-parametrised tests pick it up.
A family's module is imported only when its spec is first asked for, so a run
imports its own family's transformers modeling code and not the others'.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from torch import nn

from growcockpit.families.spec import BlockCall, FamilySpec, ModelShape, TensorRule
from growcockpit.plan.families import FAMILIES, UnknownFamily
from growcockpit.text.safe_text import quoted

# name -> (module, FamilySpec subclass): a family's module, and the transformers modeling
# module it imports (seconds each), loads only when a plan of that family asks for it
REGISTERED: dict[str, tuple[str, str]] = {
    "bert": ("growcockpit.families.bert", "BertSpec"),
    "gpt2": ("growcockpit.families.gpt2", "GPT2Spec"),
    "llama": ("growcockpit.families.llama", "LlamaSpec"),
}
assert tuple(REGISTERED) == FAMILIES, "plan/families.py and the torch registry must agree"


class FamilySpecs(Mapping[str, FamilySpec]):
    """The registered specs by name, each built (its module imported) on first use."""

    def __init__(self) -> None:
        self._built: dict[str, FamilySpec] = {}

    def __getitem__(self, name: str) -> FamilySpec:
        spec = self._built.get(name)
        if spec is None:
            module, cls = REGISTERED[name]  # KeyError: not registered
            spec = self._built[name] = getattr(importlib.import_module(module), cls)()
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTERED)

    def __len__(self) -> int:
        return len(REGISTERED)

    def __contains__(self, name: object) -> bool:
        return name in REGISTERED

    def loaded(self) -> list[str]:
        """The families built so far in this process (what a launch paid to import)."""
        return list(self._built)


FAMILY_SPECS = FamilySpecs()


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
    spec = FAMILY_SPECS.get(str(model_type)) if str(model_type) in FAMILY_SPECS else None
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
