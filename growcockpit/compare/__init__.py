"""Comparing runs: each run's validation loss against training time and estimated FLOPs,
and the verdict "reaches <target>'s final loss N× sooner".

Pure Python over the event protocol and the plan's cost model: never imports torch
or Textual, so `growcockpit compare` (headless) and the compare screen share it.
"""

from growcockpit.compare.progress import (
    EvalPoint,
    RunProgress,
    StageMark,
    TrainPoint,
    fold_events,
    load_progress,
    stage_flops_per_token,
)
from growcockpit.compare.verdict import Reach, Verdict, first_reach, verdict, verdicts

__all__ = [
    "EvalPoint",
    "Reach",
    "RunProgress",
    "StageMark",
    "TrainPoint",
    "Verdict",
    "first_reach",
    "fold_events",
    "load_progress",
    "stage_flops_per_token",
    "verdict",
    "verdicts",
]
