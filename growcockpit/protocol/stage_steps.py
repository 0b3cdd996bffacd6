"""How many steps each stage counts: its planned `steps`, or the steps it ran once it ended.

A stage ends early when `advance` is pressed (a plateau says so itself, with a
`plan_changed`): the next `stage_started` names the global step where it began, so the
ended stage ran `that step − its own start`. Every reader that shows a total (the
cockpit's header and ETA, Home, `status --json`, `compare`) folds its stage starts
through one `StageSteps`, so they all say the same total. A rollback to stage k makes
stage k (and every later one) count its plan again: the run has not ended it yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class StageSteps:
    """Stage starts seen so far and the steps of the stages that ended."""

    starts: dict[int, int] = field(default_factory=dict)  # stage index → global step at entry
    ran: dict[int, int] = field(default_factory=dict)  # ended stage → steps it ran

    def started(self, index: int, step: int) -> None:
        """A `stage_started`: the stage before it ended at `step`."""
        if index in self.starts:
            return  # entered again (a resume at the stage start): it still began where it did
        before = self.starts.get(index - 1)
        if before is not None and step >= before:
            self.ran[index - 1] = step - before
        self.starts[index] = step

    def rolled_back(self, stage: int) -> None:
        """The run is back in `stage`: it and the stages after it have not ended."""
        for index in [i for i in self.starts if i > stage]:
            del self.starts[index]
        for index in [i for i in self.ran if i >= stage]:
            del self.ran[index]

    def steps(self, index: int, planned: int) -> int:
        return self.ran.get(index, planned)

    def total(self, planned: Sequence[int]) -> int:
        """The run's total: each stage's planned steps, or what it ran if it ended."""
        return sum(self.steps(i, p) for i, p in enumerate(planned))
