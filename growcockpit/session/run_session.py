"""One run as one cockpit sees it, without Textual: tailing, folding, liveness, control.

The dashboard is a view of a `RunSession`: the session reads the run
directory (events.jsonl, status.json, plan.toml, backend.log) and folds what
it reads into its `RunState`, always doing the disk I/O and JSON parsing
outside `lock` and holding the lock only to fold. A view takes the lock only
to read the state, so a slow disk never stalls the screen. `run()` is the
tail loop a view starts in a thread; `poll()` is one round of it, for tests
and scripts.

Attaching to a long run folds its backlog in large chunks through the bulk
fold (`fold.bulk`), so the whole history is there at once, not replayed; a
session that folded a long log leaves a derived index next to it
(`attach_index`), so the next attach starts from there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from growcockpit.protocol.commands import CommandAck
from growcockpit.session import attach_index
from growcockpit.session.controller import ControllerLock
from growcockpit.session.fold.bulk import fold_objects, parse_lines
from growcockpit.session.run_client import RunClient
from growcockpit.session.run_state import RunState

POLL_S = 0.2  # how often the tail loop looks for new lines once caught up
ALIVE_CHECK_S = 2.0
READ_CHUNK = 25_000  # lines folded per round (bounds memory on a huge backlog)
INDEX_EVERY = 10_000  # events folded from the log before the attach index is (re)written


class RunSession:
    """Everything about one run that is not drawing: see the module docstring."""

    def __init__(
        self, run_dir: Path, *, plan_path: Path | None = None, read_chunk: int = READ_CHUNK
    ) -> None:
        self.run_dir = Path(run_dir)
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.client = RunClient(self.run_dir)
        self.state = RunState()
        self.lock = threading.Lock()
        self.controller = ControllerLock(self.run_dir)
        self.role = ""  # "controller", "controller (no lock: …)" or "read-only: …"
        self.read_chunk = read_chunk
        self.caught_up = False  # the tail has reached the end of the log at least once
        self.events_read = 0
        self._plan_loaded = False
        self._resets = 0
        self._last_alive = 0.0
        self._folded_offset = 0  # the log offset the state covers (under `lock`)
        self._unindexed = 0  # events folded from the log since the index was written
        self._index_tried = False

    # ---- controller role ---------------------------------------------------
    def claim_control(self) -> None:
        """Take the controller role if free; otherwise say who holds it (read-only)."""
        if self.controller.try_acquire():
            self.role = "controller"
        elif self.controller.problem:
            self.role = f"controller (no lock: {self.controller.problem})"
        else:
            holder = self.controller.holder()
            who = holder.describe() if holder is not None else "another cockpit"
            self.role = f"read-only: controlled by {who}"

    @property
    def read_only(self) -> bool:
        return self.role.startswith("read-only")

    def release(self) -> None:
        """Leave the run: give up the controller role and keep the attach index current."""
        self.controller.release()
        if self._unindexed >= INDEX_EVERY:
            self.save_index()

    # ---- the attach index --------------------------------------------------
    @property
    def unindexed(self) -> int:
        """Events folded from the log since the attach index was last written."""
        return self._unindexed

    def load_index(self) -> bool:
        """Start from the run's attach index when it matches the log (first poll only)."""
        self._index_tried = True
        found = attach_index.load(self.run_dir, self.client.paths.events)
        if found is None:
            return False
        state, offset, count = found
        with self.lock:
            self.state = state
            self.client.tail.offset = self._folded_offset = offset
            self.events_read = count
        return True

    def save_index(self) -> None:
        with self.lock:
            snapshot = attach_index.state_to_dict(self.state)
            offset, count = self._folded_offset, self.events_read
        if attach_index.save(self.run_dir, self.client.paths.events, snapshot, offset, count):
            self._unindexed = 0

    # ---- tailing -----------------------------------------------------------
    def poll(self) -> int:
        """Read and fold what was appended; returns how many lines were read."""
        tail = self.client.tail
        if not self._index_tried and tail.offset == 0:
            self.load_index()
        elif self.caught_up and self._unindexed >= INDEX_EVERY:
            self.save_index()  # a round after catching up: the first screen comes first
        try:
            lines = tail.read_lines(self.read_chunk)
        except OSError as exc:  # a broken log must not kill the view
            self.note("cockpit", f"cannot read events.jsonl: {exc}", "error")
            return 0
        objs, bad = parse_lines(lines)
        with self.lock:
            if tail.resets != self._resets:  # the log was replaced: start over
                self._resets = tail.resets
                self.state = RunState()
                self.events_read = 0
                self._plan_loaded = False
                self._unindexed = 0
            folded, odd = fold_objects(self.state, objs)
            self._folded_offset = tail.offset
            self.events_read += folded
        tail.skipped += bad + odd
        self._unindexed += folded
        if len(lines) < self.read_chunk:
            self.load_plan_if_needed()
            self.caught_up = True
        return len(lines)

    def run(
        self, cancelled: Callable[[], bool], sleep: Callable[[float], Any] = time.sleep
    ) -> None:
        """The tail loop: poll, check liveness and the controller role, until cancelled."""
        while not cancelled():
            read = self.poll()
            now = time.monotonic()
            if now - self._last_alive >= ALIVE_CHECK_S:
                self._last_alive = now
                self.check_alive()
                if self.read_only:
                    self.claim_control()  # the controller may have left: take over
            if read < self.read_chunk:
                sleep(POLL_S)

    def check_alive(self) -> None:
        """Is a backend still there? Says why not, once, in the event log."""
        alive = self.client.backend_alive()
        with self.lock:
            before, finished = self.state.backend_alive, self.state.finished
        if alive == before:
            return
        why = ""
        if alive is False and before is not False and not finished:
            code = self.client.exit_code()
            tail = self.client.log_tail(1)
            why = f" (exit code {code})" if code is not None else ""
            detail = f": {tail[0]}" if tail else ""
            why = f"backend is not running{why}; see backend.log{detail}"
        with self.lock:
            self.state.backend_alive = alive
            self.state.version += 1
            if why:
                self.state.note("backend", why, "error")

    def load_plan_if_needed(self) -> None:
        """Stage names for the header and the advance dialog when events lack the plan.

        The run's own plan.toml wins; the launched plan file stands in until it exists.
        """
        with self.lock:
            if self._plan_loaded or self.state.stages:
                return
            have_name = bool(self.state.plan_name)
        path = self.client.paths.plan
        if not path.exists():
            if self.plan_path is None or have_name:
                return
            path = self.plan_path
        self._plan_loaded = path == self.client.paths.plan
        try:
            from growcockpit.plan import load_plan

            # checked at launch; its data or tokenizer may since have moved (a copied run)
            plan = load_plan(path, validate=False)
        except Exception:  # only cosmetic: the events still drive everything
            self._plan_loaded = True
            return
        with self.lock:
            self.state.set_plan(plan)

    # ---- commands and notes ------------------------------------------------
    def send(self, command: str, args: dict[str, Any], timeout: float) -> CommandAck:
        """Send a command and wait for its ack (blocks: call from a worker thread)."""
        return self.client.send(command, args, timeout=timeout)

    def note(self, kind: str, text: str, severity: str = "info") -> None:
        with self.lock:
            self.state.note(kind, text, severity)
