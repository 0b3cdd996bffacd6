"""The phases of a backend's start-up, as `startup` events name them, and how they read.

A run spends seconds to minutes between launch and its first step (imports,
the token cache, a checkpoint, compiling). The backend reports each phase as
a `StartupPhase` event; the cockpit and the home screen fold them into one
line ("starting: building the token cache 4.1 s") and the dashboard's log
gets the whole breakdown once the first step is done.
"""

from __future__ import annotations

from typing import Literal

PhaseName = Literal[
    "imports",
    "device",
    "tokenizer",
    "token_cache",
    "model",
    "init_from",
    "restore",
    "checkpoint",
    "optimizer",
    "compile",
    "first_step",
]

# what a starting run is doing, in the order a launch goes through them
PHASE_TEXT: dict[str, str] = {
    "imports": "importing torch and transformers",
    "device": "initialising the device",
    "tokenizer": "loading the tokenizer",
    "token_cache": "building the token cache",
    "model": "building the model",
    "init_from": "loading the init_from weights",
    "restore": "restoring the checkpoint",
    "checkpoint": "writing the stage-start checkpoint",
    "optimizer": "building the optimizer",
    "compile": "compiling the step",
    "first_step": "taking the first step",
}

FIRST_PHASE: PhaseName = "imports"
LAST_PHASE: PhaseName = "first_step"


def phase_text(phase: str) -> str:
    """The phase in words (an unknown name from a newer backend reads as itself)."""
    return PHASE_TEXT.get(phase, phase.replace("_", " "))


def starting_line(phase: str, seconds: float) -> str:
    """The one line a starting run shows: what it does and for how long so far."""
    return f"starting: {phase_text(phase)} {max(0.0, seconds):.1f} s"


def ended_text(phase: str, seconds: float) -> str:
    """An ended phase in a breakdown: "token cache 0.3 s"."""
    return f"{phase.replace('_', ' ')} {seconds:.1f} s"
