"""What the home screen lists: plan files and run directories. Plain Python, no Textual.

Plans: the shipped `sample_plans/` and the user's own `*.toml` (in the working
directory and its `plans/`). Runs: `runs/*/` directories, summarised from
`status.json` when present, else from the tail of `events.jsonl`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from growcockpit.plan import PlanError, plan_from_dict
from growcockpit.protocol import safe_fs
from growcockpit.protocol.run_notes import RunNotes, read_notes_quietly
from growcockpit.protocol.rundir import RunDirError, RunPaths, pid_alive, read_status
from growcockpit.protocol.startup_phases import starting_line
from growcockpit.resources import sample_plans_dir
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState

TAIL_BYTES = 256 * 1024
STATUS_WORDS = {
    "starting": "live",
    "running": "live",
    "waiting": "live",
    "paused": "paused",
    "completed": "completed",
    "stopped": "stopped",
    "crashed": "crashed",
}


@dataclass(frozen=True)
class PlanEntry:
    path: Path
    name: str
    origin: str  # "sample" | "yours"
    stages: int
    steps: int
    final_layers: int
    description: str = ""
    problem: str = ""  # not a readable plan (shown, but marked)


@dataclass(frozen=True)
class RunEntry:
    path: Path
    name: str
    status: str  # live | paused | finished | stopped | crashed | unknown
    plan: str = ""
    stage: str = ""  # "2/3 grow-4"
    step: int = 0
    total_steps: int = 0
    loss: float | None = None
    updated: float = 0.0  # unix time of the last sign of life (heartbeat or log write)
    notes: RunNotes = RunNotes()  # the user's note and tags (notes.json)
    phase: str = ""  # a starting run's start-up phase under way (protocol/startup_phases.py)
    phase_since: float = 0.0

    def stage_text(self, now: float) -> str:
        """The stage column: what a starting run is doing, else its stage."""
        if self.phase and self.live:
            return starting_line(self.phase, now - self.phase_since)
        return self.stage

    @property
    def live(self) -> bool:
        return self.status in ("live", "paused")


def _plan_entry(path: Path, origin: str) -> PlanEntry | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    except tomllib.TOMLDecodeError as exc:
        return PlanEntry(path, path.stem, origin, 0, 0, 0, problem=f"TOML error: {exc}")
    stages = data.get("stages")
    if not isinstance(stages, list):
        return None  # some other TOML file (pyproject.toml …)
    raw_model = data.get("model")
    model: dict[str, object] = raw_model if isinstance(raw_model, dict) else {}
    steps = _planned_steps(data, stages)
    return PlanEntry(
        path=path,
        name=str(data.get("name") or path.stem),
        origin=origin,
        stages=len(stages),
        steps=steps,
        final_layers=int(str(model.get("final_layers", 0) or 0)),
        description=str(data.get("description", "")),
    )


def _planned_steps(data: dict[str, object], stages: list[object]) -> int:
    """The steps a run of the plan trains, as `plan validate` counts them: with a [budget],
    the fill stage's fitted steps, not the ones written (or left out) in the file."""
    try:
        return plan_from_dict(data, validate=False).total_steps
    except PlanError:  # not a plan yet: what the file says
        return sum(int(s.get("steps", 0) or 0) for s in stages if isinstance(s, dict))


def list_plans(workdir: Path | None = None, samples: Path | None = None) -> list[PlanEntry]:
    """The user's plans (working directory and its plans/) first, then the samples."""
    workdir = Path.cwd() if workdir is None else Path(workdir)
    samples = sample_plans_dir() if samples is None else samples
    out: list[PlanEntry] = []
    seen: set[Path] = set()
    for folder, origin in ((workdir, "yours"), (workdir / "plans", "yours"), (samples, "sample")):
        for path in sorted(folder.glob("*.toml")):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            entry = _plan_entry(path, origin)
            if entry is not None:
                out.append(entry)
    return out


def _tail_lines(path: Path) -> list[bytes]:
    try:  # a FIFO or device planted here would block or never end: refused, not opened
        with os.fdopen(safe_fs.open_read(path), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            chunk = fh.read()
    except (OSError, RunDirError):
        return []
    lines = chunk.split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line may be cut
    return [ln for ln in lines if ln.strip()]


def _from_events(paths: RunPaths) -> RunEntry:
    """A run without status.json, summarised by folding the tail of its log (as the
    dashboard folds it). Only a finished run's state is certain: without
    status.json nobody says whether a backend is still alive."""
    state = RunState()
    fold_lines(state, _tail_lines(paths.events))
    status = STATUS_WORDS.get(state.status, "completed") if state.finished else "unknown"
    stage = f"{state.stage_index + 1} {state.stage_name}" if state.stage_index >= 0 else ""
    total = state.total_steps if state.plan_dict else 0  # a plan seen whole, not guessed
    loss = state.loss if isinstance(state.loss, int | float) else None
    try:
        updated = paths.events.stat().st_mtime
    except OSError:
        updated = 0.0
    return RunEntry(
        paths.root,
        paths.root.name,
        status,
        state.plan_name,
        stage,
        state.step,
        total,
        loss,
        updated,
    )


def run_entry(run_dir: Path) -> RunEntry | None:
    paths = RunPaths(Path(run_dir))
    if os.path.lexists(paths.status):
        try:
            st = read_status(paths.root)
        except RunDirError:
            st = None
        if st is not None:
            word = STATUS_WORDS.get(st.state, st.state)
            if word in ("live", "paused") and not pid_alive(st.pid):
                word = "crashed"
            n = f"/{st.num_stages}" if st.num_stages else ""
            shown = min(st.stage + 1, st.num_stages or st.stage + 1)  # old finished runs: one past
            return RunEntry(
                path=paths.root,
                name=paths.root.name,
                status=word,
                plan=st.plan_name,
                stage=f"{shown}{n} {st.stage_name}".strip(),
                step=st.step,
                total_steps=st.total_steps,
                loss=st.loss,
                updated=st.heartbeat,
                phase=st.phase,
                phase_since=st.phase_since,
            )
    if paths.events.exists():
        return _from_events(paths)
    return None


def list_runs(runs_root: Path) -> list[RunEntry]:
    """Runs under `runs_root`, live ones first, then the most recently updated."""
    try:
        dirs = [p for p in Path(runs_root).iterdir() if p.is_dir()]
    except OSError:
        return []
    out = [
        replace(e, notes=read_notes_quietly(e.path))
        for e in (run_entry(d) for d in dirs)
        if e is not None
    ]
    out.sort(key=lambda e: (not e.live, -e.updated, e.name))
    return out


def format_age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"
