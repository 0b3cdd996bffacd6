"""Soak: a live run watched by three cockpits and steered every second, for N minutes.

    python bench/soak.py --minutes 10 [--threads 1] [--attach-every 3]

A tiny model trains with metrics on every step. Three viewers follow it the
way the cockpit does (`RunClient` tails events.jsonl, `RunState` folds them;
no Textual): two stay attached, the third detaches and re-attaches every
`--attach-every` seconds. A command goes to the backend every second
(pause, resume, set_lr ×1, a refused advance, every tenth a checkpoint).

Reports the memory slope (MB per minute, least squares over the second half
of the soak, after warm-up) of the backend and of this cockpit process, and
checks that `seq` is contiguous in events.jsonl and in every viewer's stream.
Exit code 1 when `seq` has a gap or a command went unanswered.
"""

from __future__ import annotations

import argparse
import json
import os
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


def slope_mb_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS over time, second half only (after warm-up)."""
    half = samples[len(samples) // 2 :]
    if len(half) < 3:
        return float("nan")
    n = len(half)
    mt = sum(t for t, _ in half) / n
    mr = sum(r for _, r in half) / n
    var = sum((t - mt) ** 2 for t, _ in half)
    cov = sum((t - mt) * (r - mr) for t, r in half)
    return cov / var * 60 / 2**20 if var else float("nan")


def wait_first_step(run_dir: Path, timeout: float) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        events = run_dir / "events.jsonl"
        if events.exists() and '"type":"step"' in events.read_text():
            return read_status(run_dir).pid
        time.sleep(0.2)
    log = (run_dir / "backend.log").read_text() if (run_dir / "backend.log").exists() else ""
    raise SystemExit(f"soak: the backend did not start training in {timeout:.0f} s\n{log[-2000:]}")


def soak(minutes: float, attach_every: float, runs_root: Path) -> dict[str, object]:
    plan = runs_root / "soak.toml"
    plan.write_text(PLAN)
    run_dir = RunClient.launch(plan, runs_root)
    pid = wait_first_step(run_dir, timeout=300)
    backend = psutil.Process(pid)
    cockpit = psutil.Process(os.getpid())
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
    mem_backend: list[tuple[float, int]] = []
    mem_cockpit: list[tuple[float, int]] = []
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
        mem_backend.append((now, backend.memory_info().rss))
        mem_cockpit.append((now, cockpit.memory_info().rss))
        i += 1
        time.sleep(max(0.0, t0 + i - time.monotonic()))
    commander.send("resume", timeout=30)  # refused unless the last command paused it
    commander.send("stop", timeout=120)
    backend.wait(timeout=120)
    stop.set()
    watcher.join(timeout=10)
    for v in viewers:
        v.poll()
    events = read_all(run_dir / "events.jsonl")
    seqs = [e.seq for e in events]
    steps = [e for e in events if e.type == "step"]
    return {
        "run_dir": str(run_dir),
        "seconds": round(time.monotonic() - t0, 1),
        "steps": len(steps),
        "events": len(events),
        "seq_contiguous": seqs == list(range(1, len(seqs) + 1)),
        "viewer_gaps": sum(v.gaps for v in viewers),
        "viewer_steps": [v.state.step for v in viewers],
        "attaches": viewers[2].attaches,
        "commands_acked": acked,
        "commands_unanswered": unanswered,
        "backend_rss_mb": round(mem_backend[-1][1] / 2**20, 1),
        "backend_slope_mb_per_min": round(slope_mb_per_min(mem_backend), 3),
        "cockpit_rss_mb": round(mem_cockpit[-1][1] / 2**20, 1),
        "cockpit_slope_mb_per_min": round(slope_mb_per_min(mem_cockpit), 3),
        "final_state": read_status(run_dir).state,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--attach-every", type=float, default=3.0, help="seconds")
    ap.add_argument("--threads", type=int, default=1, help="the backend's OMP_NUM_THREADS")
    ap.add_argument("--runs", type=Path, help="runs root (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    root = args.runs or Path(tempfile.mkdtemp(prefix="gc-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    report = soak(args.minutes, args.attach_every, root)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:28} {value}")
    ok = (
        report["seq_contiguous"]
        and report["viewer_gaps"] == 0
        and report["commands_unanswered"] == 0
        and report["final_state"] == "stopped"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
