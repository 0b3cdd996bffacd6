"""Mirrors of a run's event log into TensorBoard and Weights & Biases.

A mirror is fed every event that goes to events.jsonl, as it is written
(`RunReporter.emit`), or later from the file (`growcockpit export`). TensorBoard
files are written with the standard library (`export.tfevents`: the default
install writes them; the `tensorboard` package only shows them); W&B needs its
optional extra, imported only when a plan asks for it: `pip install "growcockpit[wandb]"`.
Knows protocol, never torch or textual.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Protocol

from growcockpit.protocol.event_fields import bad_field
from growcockpit.protocol.eventlog import EventTail
from growcockpit.protocol.events import Event
from growcockpit.protocol.rundir import RunPaths
from growcockpit.protocol.safe_fs import RunDirError


class MirrorError(Exception):
    """A mirror cannot start; the message names the setting and the fix."""


class Mirror(Protocol):
    def __call__(self, event: Event) -> None: ...

    def close(self) -> None: ...


def _needs(package: str, setting: str) -> MirrorError:
    return MirrorError(
        f"{setting} needs the {package} package; "
        f'pip install "growcockpit[{package}]", or turn the setting off'
    )


def tensorboard_mirror(log_dir: Path) -> Mirror:
    """Writes TensorBoard files with the standard library: no package to install."""
    from growcockpit.export.tb_mirror import TensorBoardMirror

    return TensorBoardMirror(log_dir)


def wandb_mirror(run_dir: Path, run_name: str, config: dict[str, Any]) -> Mirror:
    try:
        from growcockpit.export.wandb_mirror import WandbMirror
    except ImportError:
        raise _needs("wandb", 'logging.wandb = "offline"') from None
    return WandbMirror(run_dir, run_name, config)


class Mirrors:
    """The mirrors of one run. A mirror that fails is dropped, never the run."""

    def __init__(self, mirrors: list[tuple[str, Mirror]]) -> None:
        self.mirrors = mirrors

    def __call__(self, event: Event) -> list[str]:
        """Feed `event` to every mirror; returns a warning per mirror that just failed."""
        problems = []
        for name, mirror in list(self.mirrors):
            try:
                mirror(event)
            except Exception as exc:
                self.mirrors.remove((name, mirror))
                problems.append(f"{name} mirror stopped: {type(exc).__name__}: {exc}")
        return problems

    def close(self) -> None:
        for name, mirror in self.mirrors:
            try:
                mirror.close()
            except Exception as exc:
                print(f"growcockpit: closing the {name} mirror: {exc}", file=sys.stderr)
        self.mirrors = []


def open_mirrors(
    run_dir: Path, tensorboard: bool, wandb: str, run_name: str, config: dict[str, Any]
) -> Mirrors | None:
    """The mirrors a plan's [logging] asks for (None when none); raises MirrorError."""
    opened: list[tuple[str, Mirror]] = []
    if tensorboard:
        opened.append(("tensorboard", tensorboard_mirror(RunPaths(run_dir).tensorboard)))
    if wandb != "off":
        try:
            opened.append(("wandb", wandb_mirror(run_dir, run_name, config)))
        except MirrorError:
            Mirrors(opened).close()
            raise
    return Mirrors(opened) if opened else None


def export_tensorboard(run_dir: Path, out_dir: Path) -> str:
    """Write a run's events.jsonl (finished or live: what is there now) as TensorBoard files.

    Returns a one-line summary; raises MirrorError when there is nothing to read.
    """
    log = RunPaths(run_dir).events
    if not log.is_file():
        raise MirrorError(f"{run_dir}: no events.jsonl; give a run directory, e.g. runs/<id>")
    tail = EventTail(log)
    try:
        mirror = tensorboard_mirror(out_dir)
    except OSError as exc:
        raise MirrorError(
            f"{out_dir}: cannot write TensorBoard files there ({exc.strerror or exc}); "
            "give a writable directory"
        ) from None
    count = damaged = 0
    try:
        while batch := _read(tail, log):
            for event in batch:
                if bad_field(event) is not None:  # the cockpit's fold skips the same lines
                    damaged += 1
                    continue
                try:
                    mirror(event)
                except (TypeError, ValueError, AttributeError, KeyError, OverflowError):
                    damaged += 1  # a line that decodes but whose fields lie (a hand-edited log)
                    continue
                count += 1
    finally:
        mirror.close()
    bad = tail.skipped + damaged
    skipped = f" ({bad} unreadable lines skipped)" if bad else ""
    return (
        f"wrote {count} events of {run_dir} to {out_dir}{skipped}: tensorboard --logdir {out_dir}"
    )


def _read(tail: EventTail, log: Path) -> list[Event]:
    try:
        return tail.read_new(10_000)
    except RunDirError as exc:  # a FIFO or a link planted as events.jsonl
        raise MirrorError(str(exc)) from None
    except OSError as exc:
        raise MirrorError(f"{log}: unreadable ({exc.strerror or exc})") from None


__all__ = [
    "Mirror",
    "MirrorError",
    "Mirrors",
    "export_tensorboard",
    "open_mirrors",
]
