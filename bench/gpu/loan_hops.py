"""The loan's optional part: the depth-needing task (k-hop induction, `task:hops`) on the device.

It runs when the task's sample plans exist (sample_plans/cpu-hops*.toml): each plan trains
once through the product (`growcockpit train`), all at once, every run capped by this part's
seconds; GPU_CHECK_HOPS_SET (space-separated `key=value`, passed as `--set`) scales them up
on the GPU (more hops, more layers). Per plan: its last evaluation (accuracy, val loss) and
whether it finished or was cut, read from its event log.

Last line: `hops: <plan>=acc <a> loss <l> step <s> (completed|cut) …`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from loan_parts import hops_plans  # noqa: E402


def last_eval(events: Path) -> tuple[str, str]:
    """(the run's status or "cut", its last evaluation as text) from its event log."""
    status, last = "cut", "no evaluation"
    if not events.exists():
        return status, last
    for line in events.read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # a line cut mid-write by the kill
        if ev.get("type") == "eval":
            acc = ev.get("accuracy")
            last = (f"acc {acc:.3f} " if acc is not None else "") + (
                f"loss {ev['val_loss']:.3f} step {ev['step']}"
            )
        elif ev.get("type") == "run_finished":
            status = str(ev.get("status"))
    return status, last


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)
    end = time.time() + args.seconds - 3
    sets = [f"--set={s}" for s in os.environ.get("GPU_CHECK_HOPS_SET", "").split() if s]
    device = ["--device", args.device] if args.device else []
    procs = {}
    for plan in hops_plans():
        run_dir = args.work / plan.stem
        procs[plan.stem] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "growcockpit",
                "train",
                str(plan),
                "--run-dir",
                str(run_dir),
                *device,
                *sets,
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        print(f"hops: {plan.stem} started", flush=True)
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, end - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    items = []
    for name, proc in procs.items():
        status, last = last_eval(args.work / name / "events.jsonl")
        if proc.returncode not in (0, None) and status == "cut" and proc.stderr is not None:
            err = proc.stderr.read().strip().splitlines()
            if err and proc.returncode > 0:
                print(f"hops: {name} exit {proc.returncode}: {err[-1]}")
        print(f"hops: {name}: {last} ({status})", flush=True)
        items.append(f"{name}={last.replace(' ', '_')}({status})")
    print("hops: " + " ".join(items), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
