"""Soak: a live run with a cockpit attached, watched by three viewers and steered every second.

    python bench/soak.py --minutes 30 [--threads 1] [--attach-every 3] [--json OUT.json]

A tiny model trains with metrics on every step. The real cockpit (the Textual app,
headless, `bench/soak_cockpit.py`) attaches in its own process and stays attached to the
end. Three more viewers follow the run the way the cockpit's session layer does
(`RunClient` tails events.jsonl, `RunState` folds them; no Textual) inside this process:
two stay attached, the third detaches and re-attaches every `--attach-every` seconds. A
command goes to the backend every second (pause, resume, set_lr ×1, a refused advance,
every tenth a checkpoint).

Prints, for the backend and for the cockpit: RSS, threads and open fds at the start, at
5 minutes and at the end; events/s; `seq` gaps in events.jsonl and in every viewer's
stream; and the cockpit's RSS growth over the last 20 minutes (the mean of the first 30 s
of that window against the mean of its last 30 s; on a soak shorter than 25 minutes, over
its last two thirds, and the 5 MB verdict is not given). Exit code 1 when `seq` has a gap,
a command went unanswered, the cockpit fell behind, or (30-minute class soaks) the
cockpit's RSS grew 5 MB or more in the late window.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from growcockpit.protocol import ControlError, read_all, read_status  # noqa: E402
from growcockpit.protocol.rundir import RunPaths  # noqa: E402
from growcockpit.session.run_client import RunClient  # noqa: E402
from growcockpit.session.run_state import RunState  # noqa: E402

PLAN = """name = "soak"
seed = 0

[model]
family = "bert"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = 2

[data]
source = "builtin"
tokenizer = "train:2000"
seq_len = 64

[optim]
lr = 1e-3
warmup_steps = 5
batch_size = 8

[metrics]
every_steps = 1
timing_every_steps = 1
system_every_s = 1
eval_every_steps = 50
eval_batches = 1

[checkpoint]
every_minutes = 1
keep = 2

[[stages]]
name = "only"
layers = 2
enter = "init"
steps = 100000000
"""

COMMANDS: list[tuple[str, dict[str, object]]] = [
    ("pause", {}),
    ("resume", {}),
    ("set_lr", {"factor": 1.0}),
    ("advance", {}),  # refused: the plan has one stage
]


@dataclass
class Viewer:
    """One cockpit's view: tail + fold, and a check that its `seq` never skips."""

    run_dir: Path
    client: RunClient = field(init=False)
    state: RunState = field(init=False)
    last_seq: int = 0
    gaps: int = 0
    events: int = 0
    attaches: int = 0

    def __post_init__(self) -> None:
        self.attach()

    def attach(self) -> None:
        self.client = RunClient(self.run_dir)
        self.state = RunState()
        self.last_seq = 0
        self.attaches += 1

    def poll(self) -> None:
        new = self.client.read_new()
        for ev in new:
            if ev.seq != self.last_seq + 1:
                self.gaps += 1
            self.last_seq = ev.seq
        self.state.apply_all(new)
        self.events += len(new)


LATE_WINDOW_S = 20 * 60
FULL_SOAK_MIN = 25.0
GROWTH_LIMIT_MB = 5.0
MARK_S = 5 * 60


@dataclass
class Sample:
    """One second of one process: RSS in bytes, threads, open fds."""

    t: float
    rss: int
    threads: int
    fds: int


def sample(proc: psutil.Process, t: float) -> Sample:
    with proc.oneshot():
        return Sample(t, proc.memory_info().rss, proc.num_threads(), proc.num_fds())


def slope_mb_per_min(samples: list[Sample]) -> float:
    """Least-squares slope of RSS over time, second half only (after warm-up)."""
    half = samples[len(samples) // 2 :]
    if len(half) < 3:
        return float("nan")
    n = len(half)
    mt = sum(s.t for s in half) / n
    mr = sum(s.rss for s in half) / n
    var = sum((s.t - mt) ** 2 for s in half)
    cov = sum((s.t - mt) * (s.rss - mr) for s in half)
    return cov / var * 60 / 2**20 if var else float("nan")


def at(samples: list[Sample], t: float) -> Sample:
    """The first sample at or after `t` (the last one when the soak was shorter)."""
    return next((s for s in samples if s.t >= t), samples[-1])


def late_growth_mb(samples: list[Sample], full: bool) -> tuple[float, float]:
    """RSS growth over the late window: mean of its first 30 s against mean of its last 30 s.

    Means rather than two single samples, so one garbage-collection swing at either edge
    does not decide the verdict. The window is the last 20 minutes of a full soak, the last
    two thirds of a shorter one. Returns (growth in MB, window length in s)."""
    end = samples[-1].t
    window = LATE_WINDOW_S if full else end * 2 / 3
    inside = [s for s in samples if s.t >= end - window]
    edge = max(1, min(30, len(inside) // 4))
    first = sum(s.rss for s in inside[:edge]) / edge
    last = sum(s.rss for s in inside[-edge:]) / edge
    return (last - first) / 2**20, inside[-1].t - inside[0].t


def marks(samples: list[Sample]) -> dict[str, dict[str, float]]:
    points = {"start": samples[0], "5min": at(samples, MARK_S), "end": samples[-1]}
    return {
        name: {
            "t_s": round(s.t),
            "rss_mb": round(s.rss / 2**20, 1),
            "threads": s.threads,
            "fds": s.fds,
        }
        for name, s in points.items()
    }


def wait_first_step(run_dir: Path, timeout: float) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        events = RunPaths(run_dir).events
        if events.exists() and '"type":"step"' in events.read_text():
            return read_status(run_dir).pid
        time.sleep(0.2)
    log = RunPaths(run_dir).log.read_text() if RunPaths(run_dir).log.exists() else ""
    raise SystemExit(f"soak: the backend did not start training in {timeout:.0f} s\n{log[-2000:]}")


def start_cockpit(run_dir: Path, stop_file: Path, out: Path) -> subprocess.Popen[bytes]:
    """The real cockpit in its own process; returns once its dashboard is up.

    Its output goes to a file, not a pipe: nobody reads a pipe for 30 minutes, and a full
    one would stall the cockpit being measured."""
    with out.open("wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "bench" / "soak_cockpit.py"), str(run_dir), str(stop_file)],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if out.read_text().startswith("cockpit: attached"):
            return proc
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"soak: the cockpit did not attach:\n{out.read_text()[-2000:]}")


def soak(minutes: float, attach_every: float, runs_root: Path) -> dict[str, object]:
    plan = runs_root / "soak.toml"
    plan.write_text(PLAN)
    run_dir = RunClient.launch(plan, runs_root)
    pid = wait_first_step(run_dir, timeout=300)
    stop_file = runs_root / "soak-cockpit.stop"
    stop_file.unlink(missing_ok=True)
    cockpit_out = runs_root / "soak-cockpit.out"
    cockpit_proc = start_cockpit(run_dir, stop_file, cockpit_out)
    backend = psutil.Process(pid)
    cockpit = psutil.Process(cockpit_proc.pid)
    own = psutil.Process(os.getpid())
    viewers = [Viewer(run_dir) for _ in range(3)]
    stop = threading.Event()

    def watch() -> None:
        next_attach = time.monotonic() + attach_every
        while not stop.is_set():
            for v in viewers:
                v.poll()
            if time.monotonic() >= next_attach:
                viewers[2].attach()
                next_attach += attach_every
            stop.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    commander = RunClient(run_dir)
    mem_backend: list[Sample] = []
    mem_cockpit: list[Sample] = []
    mem_viewers: list[Sample] = []
    acked = unanswered = 0
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < minutes * 60:
        command, args = ("checkpoint", {}) if i % 10 == 9 else COMMANDS[i % len(COMMANDS)]
        try:
            commander.send(command, args, timeout=30)
            acked += 1
        except ControlError:
            unanswered += 1
        now = time.monotonic() - t0
        mem_backend.append(sample(backend, now))
        mem_cockpit.append(sample(cockpit, now))
        mem_viewers.append(sample(own, now))
        i += 1
        time.sleep(max(0.0, t0 + i - time.monotonic()))
    soak_s = time.monotonic() - t0
    commander.send("resume", timeout=30)  # refused unless the last command paused it
    commander.send("stop", timeout=120)
    backend.wait(timeout=120)
    stop.set()
    watcher.join(timeout=10)
    for v in viewers:
        v.poll()
    stop_file.touch()
    cockpit_proc.wait(timeout=120)
    out = cockpit_out.read_text().strip().splitlines()
    cockpit_view = json.loads(out[-1]) if cockpit_proc.returncode == 0 and out else {}
    events = read_all(RunPaths(run_dir).events)
    seqs = [e.seq for e in events]
    log_gaps = sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b != a + 1)
    steps = [e for e in events if e.type == "step"]
    full = minutes >= FULL_SOAK_MIN
    growth, window = late_growth_mb(mem_cockpit, full)
    return {
        "run_dir": str(run_dir),
        "seconds": round(soak_s, 1),
        "steps": len(steps),
        "events": len(events),
        "events_per_s": round(len(events) / soak_s, 1),
        "seq_contiguous": seqs == list(range(1, len(seqs) + 1)) and log_gaps == 0,
        "seq_gaps_log": log_gaps,
        "viewer_gaps": sum(v.gaps for v in viewers),
        "viewer_steps": [v.state.step for v in viewers],
        "cockpit_step": cockpit_view.get("cockpit_step"),
        "cockpit_rc": cockpit_proc.returncode,
        "attaches": viewers[2].attaches,
        "commands_acked": acked,
        "commands_unanswered": unanswered,
        "backend": marks(mem_backend),
        "cockpit": marks(mem_cockpit),
        "viewers_process": marks(mem_viewers),
        "backend_rss_mb": round(mem_backend[-1].rss / 2**20, 1),
        "backend_slope_mb_per_min": round(slope_mb_per_min(mem_backend), 3),
        "cockpit_rss_mb": round(mem_cockpit[-1].rss / 2**20, 1),
        "cockpit_slope_mb_per_min": round(slope_mb_per_min(mem_cockpit), 3),
        "cockpit_late_growth_mb": round(growth, 2),
        "cockpit_late_window_s": round(window),
        "cockpit_levels_off": growth < GROWTH_LIMIT_MB if full else None,
        "final_state": read_status(run_dir).state,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--attach-every", type=float, default=3.0, help="seconds")
    ap.add_argument("--threads", type=int, default=1, help="the backend's OMP_NUM_THREADS")
    ap.add_argument("--runs", type=Path, help="runs root (default: a temp dir)")
    ap.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="OUT",
        help="print the report as one JSON line, or with a path also write it there",
    )
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    root = args.runs or Path(tempfile.mkdtemp(prefix="gc-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    report = soak(args.minutes, args.attach_every, root)
    if args.json is not None:
        if args.json != "-":
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:28} {value}")
    ok = (
        report["seq_contiguous"]
        and report["viewer_gaps"] == 0
        and report["commands_unanswered"] == 0
        and report["cockpit_rc"] == 0
        and report["cockpit_step"] == report["steps"]
        and report["cockpit_levels_off"] is not False
        and report["final_state"] == "stopped"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
