"""Keeps a run's attach index fresh while it trains, so re-attaching to a long run is instant.

A cockpit writes the attach index (`attach_index`) only while someone watches
the run. A run launched, left alone for hours and re-attached would be folded
from its first line: 1.5 s of CPU at 100k events (bench/ui.py), against 0.6 s
from a fresh index. So `growcockpit train` runs a keeper beside the backend on
rank 0: a daemon thread that tails events.jsonl exactly as a cockpit does
(`RunSession.poll`, the same bulk fold, so the index equals what a cockpit would
have written) and rewrites the index every `SAVE_S` seconds when something new
was folded, and once more when training ends.

It belongs to the cockpit (the index is the cockpit's cache); the backend never
imports it, the CLI wires it in. It costs the training process about 7 µs per
event and a ~25 ms write per save. Anything that goes wrong stops the keeper,
never the run: deleting the index loses nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from growcockpit.protocol.rundir import RunPaths

if TYPE_CHECKING:
    from growcockpit.session.run_session import RunSession

SAVE_S = 30.0  # at most one index write per this many seconds while training
POLL_S = 2.0  # how often the keeper looks for new events


class IndexKeeper:
    """The keeper thread of one run directory (module docstring)."""

    def __init__(self, run_dir: Path, save_s: float = SAVE_S, poll_s: float = POLL_S) -> None:
        self.run_dir = Path(run_dir)
        self.save_s = save_s
        self.poll_s = poll_s
        self.saves = 0
        self.failed: str | None = None  # why the keeper gave up, if it did
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attach-index", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Fold what is left, write the index a last time, and end the thread."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            events = RunPaths(self.run_dir).events
            session: RunSession | None = None
            last_save = time.monotonic()
            while True:
                stopping = self._stop.wait(self.poll_s)
                if events.exists():
                    # imported once the log exists: an import on this thread while the
                    # backend imports torch would hold the GIL on its start-up path
                    from growcockpit.session.run_session import RunSession

                    session = session or RunSession(self.run_dir)
                    while session.poll() >= session.read_chunk:
                        pass
                    now = time.monotonic()
                    if session.unindexed and (stopping or now - last_save >= self.save_s):
                        session.save_index()
                        self.saves += 1
                        last_save = now
                if stopping:
                    return
        except Exception as exc:  # a cache must never take the run down
            self.failed = f"{type(exc).__name__}: {exc}"


@contextmanager
def index_kept(run_dir: Path, enabled: bool = True) -> Iterator[IndexKeeper | None]:
    """Keep `run_dir`'s attach index fresh for the duration of the block (when `enabled`)."""
    if not enabled:
        yield None
        return
    keeper = IndexKeeper(run_dir)
    keeper.start()
    try:
        yield keeper
    finally:
        keeper.stop()
