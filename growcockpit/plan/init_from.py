"""`model.init_from`: start stage 1 from a trained model instead of random weights.

The source is a local `save_pretrained` directory (a run's `final/`, or any
BERT/GPT-2 checkout). Only its `config.json` is read here (stdlib), so the
designer and `plan validate` can say at once whether the plan fits the model;
the backend loads the weights. Every file the backend will read from it
(tokenizer JSON, safetensors headers) is checked first (plan/source_files.py),
so a lying source is refused before the run directory exists. `grow_plan_from` is Home's "grow this": a plan
that starts from a finished run and doubles its depth.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from growcockpit.plan.families import FAMILIES, FAMILY_FACTS, family_of_model_type
from growcockpit.plan.source_files import SourceFileError, check_source_files, read_json
from growcockpit.plan.types import Plan, Stage
from growcockpit.text.safe_text import quoted

KEY = "model.init_from"


@dataclass(frozen=True)
class SourceShape:
    """The architecture a `save_pretrained` directory holds, in plan terms."""

    family: str
    layers: int
    hidden_size: int
    num_heads: int
    intermediate_size: int
    max_seq_len: int
    vocab_size: int
    num_kv_heads: int = 0  # 0: the family has no grouped-query attention key


# (plan field, what the fix is called in the message) for each compared size
_PLAN_FIELDS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "model.hidden_size"),
    ("num_heads", "model.num_heads"),
    ("intermediate_size", "model.intermediate_size"),
    ("max_seq_len", "model.max_seq_len"),
)


class SourceError(ValueError):
    """The directory is not a usable model; the message says why and what to give instead."""


def read_source(path: str) -> SourceShape:
    """The shape of the model saved in `path`; raises SourceError."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise SourceError(
            f"{path}: no such directory; give a save_pretrained directory, e.g. runs/<id>/final"
        )
    config_file = root / "config.json"
    try:
        config = read_json(config_file)  # size and depth bounded: never a RecursionError
        check_source_files(root)  # tokenizer files, safetensors headers: before any is used
    except FileNotFoundError:
        raise SourceError(
            f"{path}: no config.json; give a save_pretrained directory, e.g. runs/<id>/final"
        ) from None
    except SourceFileError as exc:
        raise SourceError(str(exc)) from None
    except OSError as exc:
        raise SourceError(f"{config_file}: unreadable config.json ({exc})") from None
    if not isinstance(config, dict):
        raise SourceError(f"{config_file}: expected a JSON object")
    pickled = pickled_weights(root)
    if pickled:
        raise SourceError(
            f"{path}: holds {pickled} (a pickle, which can run code when loaded) and no "
            f"*.safetensors; only safetensors weights are accepted: {CONVERT}"
        )
    model_type = config.get("model_type")
    facts = family_of_model_type(model_type)
    if facts is None:
        raise SourceError(
            f'{path}: model_type "{model_type}" is not supported; give a model of a '
            f"registered family ({', '.join(FAMILIES)})"
        )
    values: dict[str, int] = {}
    for field, key in facts.config_keys.items():
        value = config.get(key)
        if value is None and key in facts.config_defaults:
            factor, other = facts.config_defaults[key].split("*")
            value = int(factor) * int(config.get(other) or 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SourceError(f"{config_file}: {key} = {quoted(value)} is not a positive integer")
        values[field] = value
    return SourceShape(family=facts.name, **values)


PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
CONVERT = (
    "convert it once, in a Python you trust, with "
    "`AutoModel.from_pretrained(DIR).save_pretrained(DIR, safe_serialization=True)`"
)


def pickled_weights(root: Path) -> str | None:
    """The name of a pickled weights file in `root` when it has no safetensors weights.

    Only `*.safetensors` weights are loaded: a header and raw bytes, nothing executed.
    A `pytorch_model.bin` is a pickle; it is named here (by its file name, never
    opened) so validation refuses it in one line instead of the backend failing later.
    """
    if next(root.glob("*.safetensors"), None) is not None:
        return None
    found = sorted(p.name for pattern in PICKLED for p in root.glob(pattern))
    return found[0] if found else None


# a directory holding one of these has a tokenizer of its own
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")


def tokenizer_used(plan: Plan) -> str:
    """The tokenizer a run of `plan` loads: an init_from model comes with its own tokenizer
    (its embedding rows only mean something for those ids), which replaces "train:<vocab>";
    a tokenizer path or hub id the plan names is kept."""
    spec, path = plan.data.tokenizer, plan.model.init_from
    if path is None or not spec.startswith("train:"):
        return spec
    root = Path(path).expanduser()
    return str(root) if any((root / name).exists() for name in TOKENIZER_FILES) else spec


def without_init_from(plan: Plan) -> Plan:
    """`plan` as a resume sees it: the checkpoint holds the weights the source once gave,
    so the source directory may be gone (moved, cleaned up) without stopping the run."""
    if plan.model.init_from is None:
        return plan
    return dataclasses.replace(plan, model=dataclasses.replace(plan.model, init_from=None))


def init_from_problems(plan: Plan) -> list[tuple[str, str]]:
    """(key, problem) pairs when `plan` does not fit the model it starts from."""
    path = plan.model.init_from
    if path is None:
        return []
    if not path.strip():
        return [(KEY, "is empty; give a save_pretrained directory, or remove init_from")]
    try:
        source = read_source(path)
    except SourceError as exc:
        return [(KEY, str(exc))]
    problems: list[tuple[str, str]] = []
    if FAMILY_FACTS.get(source.family) is not FAMILY_FACTS.get(plan.model.family):
        problems.append(
            (
                "model.family",
                f'"{plan.model.family}" but init_from holds a {source.family} model; set family = "{source.family}"',
            )
        )
    if source.num_kv_heads and source.num_kv_heads != plan.model.kv_heads:
        problems.append(
            (
                "model.num_kv_heads",
                f"{plan.model.kv_heads} but the init_from model has {source.num_kv_heads}; "
                f"set num_kv_heads = {source.num_kv_heads}",
            )
        )
    for field, name in _PLAN_FIELDS:
        want, have = getattr(plan.model, field), getattr(source, field)
        if want != have:
            problems.append(
                (name, f"{want} but the init_from model has {have}; set {name} = {have}")
            )
    if plan.stages and plan.stages[0].layers != source.layers:
        problems.append(
            (
                "stages[0].layers",
                f"{plan.stages[0].layers} but the init_from model has {source.layers} layers; "
                f"set layers = {source.layers} (later stages grow it)",
            )
        )
    return problems


def grow_plan_from(run_plan: Plan, final_dir: str, run_name: str) -> Plan:
    """A plan that starts from a finished run's model and doubles its depth.

    Stage 1 keeps training the model as it is, stage 2 stacks it to twice the
    depth and trains the new layers, stage 3 trains everything: a starting
    point for the designer, not a recipe.
    """
    source = read_source(final_dir)
    plan = copy.deepcopy(run_plan)
    plan.name = f"{run_name}-grown"
    plan.description = f"grows the final model of run {run_name} ({source.layers} layers)"
    depth = 2 * source.layers
    m = plan.model
    m.family = source.family
    m.hidden_size, m.num_heads = source.hidden_size, source.num_heads
    m.intermediate_size, m.max_seq_len = source.intermediate_size, source.max_seq_len
    if source.num_kv_heads:
        m.num_kv_heads = source.num_kv_heads
    m.final_layers = depth
    m.init_from = final_dir
    plan.data.seq_len = min(plan.data.seq_len, source.max_seq_len)
    steps = max(1, run_plan.total_steps // max(1, len(run_plan.stages)))
    plan.stages = [
        Stage(name=f"from-{source.layers}", layers=source.layers, steps=steps, enter="init"),
        Stage(name=f"grow-{depth}", layers=depth, steps=steps, enter="stack", train="new"),
        Stage(name="all-layers", layers=depth, steps=steps, train="all"),
    ]
    return plan
