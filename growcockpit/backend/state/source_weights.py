"""An `init_from` source's tensors, checked against the shapes its own config.json implies.

The plan layer already checked that the source's config fits the plan and that each
safetensors header is self-consistent (offsets within the file, bytes = dtype × shape).
A header can still lie consistently: name the right tensors with other shapes, leave a
layer out, or carry more layers than config.json says. `from_pretrained` would find that
out only after the run directory exists, as a size-mismatch traceback or a half-fresh
model. Here the model the config describes is built on the meta device (no memory), and
every tensor of the source is compared to it by name, shape and dtype, reading headers
only, before `train` creates anything.

What is refused: a tensor whose shape differs from the model's, a weight of the body
(embeddings, layers, final norm) that the source lacks, a tensor of a layer the config
does not have, a weight stored as integers. What is let through, as `from_pretrained`
does: a missing head weight (it starts fresh, with a warning at startup), a tied weight
saved once, and tensors of modules this model does not have (a pooler, another head).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from growcockpit.families import spec_for
from growcockpit.plan.init_from import KEY
from growcockpit.plan.source_files import SourceFileError, check_safetensors
from growcockpit.plan.types import Plan
from growcockpit.text.safe_text import quoted

FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_INDEX = re.compile(r"\.\d+\.")


class SourceWeightsError(ValueError):
    """The source's weights do not match its config; the message is one line naming the tensor."""


def source_tensors(root: Path) -> dict[str, tuple[str, list[int], Path]]:
    """{name: (dtype, shape, file)} over every safetensors file of the source, headers only."""
    out: dict[str, tuple[str, list[int], Path]] = {}
    for file in sorted(root.glob("*.safetensors"))[:10_000]:
        try:
            header = check_safetensors(file)
        except SourceFileError as exc:
            raise SourceWeightsError(str(exc)) from None
        for name, (dtype, shape) in header.items():
            out[name] = (dtype, shape, file)
    return out


def expected_model(plan: Plan, root: Path) -> nn.Module:
    """The model the source's config.json describes, on the meta device: shapes, no memory."""
    family = spec_for(plan.model.family)
    config = family.config_class.from_pretrained(str(root))
    with torch.device("meta"):
        return family.model_class(config)


def _groups(model: nn.Module) -> list[list[str]]:
    """Names of each parameter or persistent buffer; a tied weight is one group of names."""
    by_id: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(param), []).append(name)
    groups = list(by_id.values())
    state = set(model.state_dict())
    named = {n for g in groups for n in g}
    groups += [[n] for n, _ in model.named_buffers() if n in state and n not in named]
    return groups


def check_source_weights(plan: Plan) -> None:
    """Raise SourceWeightsError when the source's tensors lie. Weights it lacks that start
    fresh are reported at startup by `initial_model`. A source with no safetensors file
    (a `pytorch_model.bin`) has no header to read: left to `from_pretrained`."""
    if plan.model.init_from is None:
        return
    root = Path(plan.model.init_from).expanduser()
    found = source_tensors(root)
    if not found:
        return
    model = expected_model(plan, root)
    prefix = f"{model.base_model_prefix}."
    shapes = {name: list(t.shape) for name, t in model.state_dict().items()}
    params = {name for name, _ in model.named_parameters(remove_duplicate=False)}

    def ours(name: str) -> str | None:  # a base-model checkout names the body without the prefix
        return name if name in shapes else (prefix + name if prefix + name in shapes else None)

    used: set[str] = set()
    unused: list[str] = []
    for name, (dtype, shape, file) in found.items():
        key = ours(name)
        if key is None:
            unused.append(name)
            continue
        used.add(key)
        if shape != shapes[key]:
            raise SourceWeightsError(
                f"{KEY}: {file}: tensor {quoted(name)} has shape {shape} but its config.json "
                f"implies {shapes[key]}; the weights do not belong to that config"
            )
        if key in params and dtype not in FLOAT_DTYPES:
            raise SourceWeightsError(
                f"{KEY}: {file}: weight {quoted(name)} is stored as {dtype}; a weight must be "
                f"one of {', '.join(FLOAT_DTYPES)}"
            )
    patterns = {_INDEX.sub(".#.", n) for n in shapes}
    for name in unused:
        pattern = _INDEX.sub(".#.", name)
        if pattern != name and (pattern in patterns or prefix + pattern in patterns):
            raise SourceWeightsError(
                f"{KEY}: {found[name][2]}: tensor {quoted(name)} belongs to a layer its "
                f"config.json does not have; the weights do not belong to that config"
            )
    for group in _groups(model):
        if any(n in used for n in group) or any("position_ids" in n for n in group):
            continue
        if group[0].startswith(prefix):  # a head weight may start fresh, the body may not
            raise SourceWeightsError(
                f"{KEY}: {root}: no tensor {quoted(group[0])} (shape {shapes[group[0]]}), which its "
                "config.json implies; the source is incomplete or does not belong to that config"
            )
