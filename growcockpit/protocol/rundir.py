"""Layout of a run directory and its `status.json` snapshot.

The run directory is the whole interface between a backend and any number of
cockpits: nothing else is shared, so a cockpit can die, reconnect or run on
another SSH session without the backend noticing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from growcockpit.text import safe_json
from growcockpit.text.safe_text import quoted

from . import finite_json
from .safe_fs import DIR_MODE, MAX_STATUS_BYTES, UnsafePath, read_bytes, write_atomic
from .safe_fs import RunDirError as RunDirError  # re-exported: its home was here

LIVE_STATES = ("starting", "running", "paused", "waiting")
FINAL_STATES = ("completed", "stopped", "crashed")
# The backend rewrites status.json at least this often (a heartbeat thread), so
# a heartbeat older than HEARTBEAT_STALE_S means the backend is gone or stuck.
HEARTBEAT_S = 5.0
HEARTBEAT_STALE_S = 60.0


@dataclass(frozen=True)
class RunPaths:
    """Every name in a run directory, spelled once (the backend, the cockpit, the CLI,
    the exporters and the safety check all ask this)."""

    root: Path

    PLAN = "plan.toml"
    EVENTS = "events.jsonl"
    STATUS = "status.json"
    CONTROL = "control.sock"
    LOG = "backend.log"
    INDEX = "cockpit-index.json"
    NOTES = "notes.json"  # the user's note and tags for the run (written by cockpit and CLI)
    CHECKPOINTS = "checkpoints"
    FINAL = "final"
    TOKENIZER = "tokenizer"
    TENSORBOARD = "tb"
    FILES = (PLAN, EVENTS, STATUS, LOG, INDEX, NOTES)  # regular files growcockpit writes
    DIRS = (CHECKPOINTS, FINAL, TOKENIZER, TENSORBOARD)

    @property
    def plan(self) -> Path:
        return self.root / self.PLAN

    @property
    def events(self) -> Path:
        return self.root / self.EVENTS

    @property
    def status(self) -> Path:
        return self.root / self.STATUS

    @property
    def control(self) -> Path:
        return self.root / self.CONTROL

    @property
    def checkpoints(self) -> Path:
        return self.root / self.CHECKPOINTS

    @property
    def final(self) -> Path:
        return self.root / self.FINAL

    @property
    def log(self) -> Path:
        return self.root / self.LOG

    @property
    def index(self) -> Path:
        return self.root / self.INDEX

    @property
    def notes(self) -> Path:
        return self.root / self.NOTES

    @property
    def tokenizer(self) -> Path:
        return self.root / self.TOKENIZER

    @property
    def tensorboard(self) -> Path:
        return self.root / self.TENSORBOARD


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_RUN_NAME = 64


def run_dir_name(name: str) -> str:
    """`name` as one safe path component: ASCII letters, digits, ".", "_", "-".

    Plans are validated to such names already; this also covers names that
    never went through validation (a raw TOML read, a file stem).
    """
    return _UNSAFE.sub("-", name).strip("-.")[:MAX_RUN_NAME].strip("-.") or "run"


def inside_runs(runs_root: Path, path: Path) -> Path:
    """`path` resolved, or a RunDirError when it resolves outside `runs_root`.

    Checked after resolution, so neither "..", an absolute path nor a
    symlink inside `runs/` can place a run elsewhere.
    """
    root = Path(runs_root).resolve()
    resolved = Path(path).resolve()
    if resolved == root or not resolved.is_relative_to(root):
        raise RunDirError(
            f"{path}: resolves to {resolved}, outside the runs directory {root}; "
            "give the plan a plain name (letters, digits, '.', '_', '-')"
        )
    return resolved


def new_run_dir(runs_root: Path, name: str, now: float | None = None) -> Path:
    """Create and return `runs_root/<name>-<YYYYmmdd-HHMMSS>[-N]/`, always inside `runs_root`.

    Created with `exist_ok=False`, so two launches in the same second (or a
    directory planted in advance) never share a run directory.
    """
    root = Path(runs_root)
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    base = f"{run_dir_name(name)}-{stamp}"
    n = 1
    while True:
        path = inside_runs(root, root / (base if n == 1 else f"{base}-{n}"))
        try:
            path.mkdir(mode=DIR_MODE, exist_ok=False)  # the user's alone, like its files
            return path
        except FileExistsError:
            n += 1


@dataclass
class RunStatus:
    """Current state of a run, replaced atomically by the backend on every change."""

    run_id: str = ""
    plan_name: str = ""
    state: str = "starting"  # starting | running | paused | waiting | completed | stopped | crashed
    stage: int = 0
    stage_name: str = ""
    num_stages: int = 0
    step: int = 0
    total_steps: int = 0
    loss: float | None = None
    pid: int = 0
    pid_started: float = 0.0  # the backend process's start time: a reused pid has another
    heartbeat: float = 0.0
    started: float = 0.0
    last_checkpoint: str | None = None
    phase: str = ""  # the start-up phase under way (protocol/startup_phases.py); "" when none
    phase_since: float = 0.0  # when it began (unix seconds)

    def to_json(self) -> str:
        return finite_json.dumps(asdict(self), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> RunStatus:
        """Known fields, each checked against its type; ValueError names the first bad one."""
        out: dict[str, object] = {}
        for f in fields(cls):
            if f.name in data:
                out[f.name] = _checked(f.name, str(f.type), data[f.name])
        return cls(**out)  # type: ignore[arg-type]

    def is_live(self) -> bool:
        """True when the state says live *and* the backend process still exists."""
        return self.state in LIVE_STATES and self.backend_alive()

    def backend_alive(self) -> bool:
        """Is the process that wrote this status still running?

        A pid alone can lie: after a crash the kernel may give it to another
        process. So the pid must also have the start time the backend
        recorded; where start times cannot be read (no /proc), a fresh
        heartbeat has to vouch for it instead.
        """
        if not pid_alive(self.pid):
            return False
        started = process_start_time(self.pid)
        if self.pid_started and started is not None:
            return abs(started - self.pid_started) < 1.0
        return time.time() - self.heartbeat < HEARTBEAT_STALE_S


def process_start_time(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch, as psutil's create_time on Linux).

    None where /proc is unavailable. Read from /proc so `protocol` stays stdlib only.
    """
    try:
        with open(f"/proc/{pid}/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


MAX_PID = 1 << 22
"""Linux's largest pid (`pid_max` cannot exceed 2^22)."""


def _checked(name: str, hint: str, value: object) -> object:
    """`value` if it fits the field's type (non-finite floats restored); else ValueError."""
    value = finite_json.as_float(value)
    if value is None and "None" in hint:
        return None
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
    }[hint.split(" ")[0]]
    if not ok:
        shown = quoted(value, 37) if isinstance(value, str) else repr(value)[:37]
        raise ValueError(f"{name} = {shown} is not a valid {hint.split(' ')[0]}")
    return float(value) if hint.startswith("float") else value  # type: ignore[arg-type]


def pid_alive(pid: int) -> bool:
    if not 0 < pid < MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def write_status(path: Path, status: RunStatus) -> None:
    """Write via a temp file and rename so readers never see half a file (never through a link).

    On a full disk the temp file cannot be made, and a crash left status.json saying
    "running" for good: then the file is rewritten in place, in the blocks it already
    has (a status is far under one block), as the last resort it is."""
    status.heartbeat = time.time()
    data = status.to_json().encode("utf-8")
    try:
        write_atomic(path, data)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        overwrite_in_place(path, data)


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Write `data` over the existing regular file `path` (no link, no new file), then cut
    it to length: no new block is needed while `data` fits in the ones it holds."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path}: not a regular file; remove it")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def read_status(run_dir: Path) -> RunStatus:
    """Read `status.json`, turning every failure into a one-line RunDirError."""
    paths = RunPaths(Path(run_dir))
    if not paths.root.is_dir():
        raise RunDirError(f"{paths.root}: no such run directory; pass a directory under runs/")
    if not os.path.lexists(paths.status):
        raise RunDirError(
            f"{paths.status}: missing; this is not a growcockpit run directory "
            "(or its backend never started: see backend.log)"
        )
    damaged = "; events.jsonl still holds the history (the file is rewritten while the run is live)"
    try:
        text = read_bytes(paths.status, MAX_STATUS_BYTES).decode("utf-8")
        data = safe_json.loads(text, str(paths.status), damaged.removeprefix("; "))
    except UnsafePath:
        raise
    except safe_json.JsonFileError as exc:
        raise RunDirError(str(exc)) from None
    except OSError as exc:
        raise RunDirError(f"{paths.status}: unreadable ({exc.strerror or exc}){damaged}") from None
    except UnicodeDecodeError:
        raise RunDirError(f"{paths.status}: not UTF-8 text{damaged}") from None
    except (ValueError, RecursionError) as exc:
        raise RunDirError(f"{paths.status}: not valid JSON ({str(exc)[:80]}){damaged}") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{paths.status}: not a JSON object{damaged}")
    try:
        status = RunStatus.from_dict(data)
    except ValueError as exc:
        raise RunDirError(f"{paths.status}: {exc}{damaged}") from None
    if status.state in LIVE_STATES and not status.backend_alive():
        status.state = "crashed"
    return status
