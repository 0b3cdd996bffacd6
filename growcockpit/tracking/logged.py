"""The loop's own metrics: `cockpit.log({...})` and `cockpit.eval(val_loss=...)`.

Composed into `Tracker`, which hands it how to emit, warn and where the run stands: the
values are checked (scalars.py),
a validation loss becomes the engine's `eval` event and the rest a `scalars` event, and a
bad value is one line on the script's stderr and one warning in the run, once per
problem, never an exception in the user's loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from growcockpit.protocol.events import Eval, Event, Scalars
from growcockpit.tracking.scalars import check_scalars, perplexity


class LogDesk:
    """`log`, `eval` and `tell` of a `Tracker`; it owns which problems were said already."""

    def __init__(
        self,
        emit: Callable[[Event], Event],
        warn: Callable[[str], None],
        position: Callable[[], tuple[int, int]],
    ) -> None:
        self._emit = emit
        self._warn = warn
        self._position = position  # (the last step, the stage)
        self._warned: set[str] = set()

    def tell(self, message: str, once: str | None = None) -> None:
        """One line to the script's stderr and the run's events (once per `once` key)."""
        if once is not None:
            if once in self._warned:
                return
            self._warned.add(once)
        print(f"growcockpit: {message}", file=sys.stderr, flush=True)
        try:
            self._warn(message)
        except Exception:  # the run is closed (log after close): the line above said it
            return

    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Any scalars of yours at `step` (default: the last step): `log({"grad_norm": g})`.

        A validation loss (`val/loss`, `val_loss`, `eval/loss`, `eval_loss`) becomes an
        `eval` event, as growcockpit's own evaluations. A bad value is dropped with one
        warning line; this never raises."""
        try:
            checked = check_scalars(metrics, "cockpit.log")
            self._logged(checked.values, checked.val_loss, checked.problems, step)
        except Exception as exc:  # the user's script must not die of a metric
            self.tell(f"cockpit.log: not logged: {type(exc).__name__}: {exc}", once=repr(exc))

    def eval(self, val_loss: Any = None, step: int | None = None, **metrics: Any) -> None:
        """An evaluation at `step` (default: the last step): `eval(val_loss=2.1, accuracy=.6)`.

        The loss becomes an `eval` event (compare, the pin, the `v` plots, export); the
        other values are logged as `val/<name>`. Never raises."""
        try:
            named = {k if "/" in k else f"val/{k}": v for k, v in metrics.items()}
            checked = check_scalars(named, "cockpit.eval")
            loss = None
            if val_loss is not None:
                loss_checked = check_scalars({"val_loss": val_loss}, "cockpit.eval")
                checked.problems.extend(loss_checked.problems)
                loss = loss_checked.val_loss
            self._logged(checked.values, loss, checked.problems, step)
        except Exception as exc:
            self.tell(f"cockpit.eval: not logged: {type(exc).__name__}: {exc}", once=repr(exc))

    def _logged(
        self,
        values: dict[str, float],
        val_loss: float | None,
        problems: list[str],
        step: int | None,
    ) -> None:
        for problem in problems:
            self.tell(problem, once=problem)
        last, stage = self._position()
        at = last if step is None else int(step)
        if val_loss is not None:
            self._emit(Eval(step=at, stage=stage, val_loss=val_loss, val_ppl=perplexity(val_loss)))
        if values:
            self._emit(Scalars(step=at, stage=stage, values=values))
