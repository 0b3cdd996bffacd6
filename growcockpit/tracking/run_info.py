"""What a tracked run's first event says about it: the model's family, the user's config,
the notes, the versions, and (for a resumed loop) where the run's log left off."""

from __future__ import annotations

import json
import platform
import socket
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from torch import nn

from growcockpit.families import FAMILY_SPECS
from growcockpit.protocol.eventlog import read_all
from growcockpit.protocol.events import Step
from growcockpit.protocol.run_notes import RunNotes, note_problem, parse_tags
from growcockpit.tracking.run_files import TrackError


def family_model(model: nn.Module) -> nn.Module | None:
    """The GPT-2, BERT or Llama model in `model` (itself, or one it wraps: a LightningModule,
    a user's own module holding one), else None."""
    for module in model.modules():
        if str(getattr(getattr(module, "config", None), "model_type", "")) in FAMILY_SPECS:
            return module
    return None


def plain_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's config as JSON can hold it (anything else as its text)."""
    if not config:
        return {}
    loaded = json.loads(json.dumps(dict(config), default=str))
    return loaded if isinstance(loaded, dict) else {}


def run_notes(root: Path, note: str, tags: Sequence[str]) -> RunNotes:
    problem = note_problem(note)
    try:
        parsed = parse_tags(",".join(tags))
    except ValueError as exc:
        problem = str(exc)
    if problem:
        raise TrackError(f"{root}: note/tags: {problem}")
    return RunNotes(note, parsed)


def versions() -> dict[str, str]:
    """As the backend reports them (growcockpit's from the installed metadata: the package
    root imports this module lazily, so this module does not import the root)."""
    import transformers

    try:
        own = metadata.version("growcockpit")
    except metadata.PackageNotFoundError:
        own = "unknown"
    return {
        "growcockpit": own,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }


def tokens_at(events_path: Path, step: int) -> int:
    """The tokens a run had trained on by `step` (its last step event at or before it), so
    a resumed loop's token axis goes on from there; 0 when the log has none."""
    try:
        steps = [e for e in read_all(events_path) if isinstance(e, Step) and e.step <= step]
    except OSError:
        return 0
    return steps[-1].tokens if steps else 0
