"""`python bench/hops_cpu.py …`: growth against every control on k-hop induction, on CPU.

Every run is the product's own training (`growcockpit train` on a sample plan with
`--set` overrides); this script only launches them, reads their event logs and
tabulates. One run's record (bench/results/hops_cpu/<tag>.json) holds its evaluations
with the FLOPs (plan/flops.py, head included) and the summed step time at each: wall
time leaves evaluations and start-up out, for every method alike.

  run TAG PLAN [--set K=V …]   one run, its JSON written when it ends
  queue FILE                   the jobs in FILE (one `TAG PLAN [K=V …]` a line), skipping
                               those already recorded: run two queues side by side at most
  report [--target 0.95]       the tables (bench/results/hops_cpu.md is written from it);
         [--gate-from DIR]     the depth gate from DIR's records (a back-to-back rerun);
         [--flops-only]        claim on FLOPs alone (runs made at different loads)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from growcockpit.plan.flops import flops_through_step  # noqa: E402
from growcockpit.plan.load import plan_from_dict  # noqa: E402

# HOPS_CPU_OUT: another record folder (e.g. a back-to-back rerun for wall times)
OUT = Path(os.environ.get("HOPS_CPU_OUT", ROOT / "bench" / "results" / "hops_cpu"))
PY = str(ROOT / ".venv" / "bin" / "python")


def read_run(events: Path) -> dict[str, Any]:
    """Evaluations with FLOPs and summed step seconds at each, from one run's event log."""
    plan = None
    wall_ms: dict[int, float] = {}
    total = 0.0
    evals: list[dict[str, Any]] = []
    finished = ""
    pauses: list[int] = []
    for line in events.read_text().splitlines():
        ev = json.loads(line)
        kind = ev.get("type")
        if kind == "run_started" and plan is None:
            plan = plan_from_dict(ev["plan"], validate=False)
        elif kind == "step":
            total += float(ev.get("step_ms") or 0.0)
            wall_ms[int(ev["step"])] = total
        elif kind == "eval":
            evals.append(
                {"step": ev["step"], "accuracy": ev.get("accuracy"), "val_loss": ev["val_loss"]}
            )
        elif kind == "paused":
            pauses.append(int(ev.get("step") or 0))
        elif kind == "run_finished":
            finished = str(ev.get("status", ""))
    assert plan is not None, f"{events}: no run_started"
    for e in evals:
        e["flops"] = flops_through_step(plan, e["step"])
        e["wall_s"] = wall_ms.get(e["step"], 0.0) / 1000
    return {
        "plan": plan.name,
        "seed": plan.seed,
        "lr": plan.optim.lr,
        "stages": [[s.layers, s.steps] for s in plan.stages],
        "status": finished,
        "total_flops": flops_through_step(plan, sum(s.steps for s in plan.stages)),
        "wall_s": total / 1000,
        "evals": evals,
        "paused_at": pauses,  # steps where the run paused (a loss spike) and was resumed
    }


def run(tag: str, plan: str, sets: list[str]) -> Path:
    out = OUT / f"{tag}.json"
    with tempfile.TemporaryDirectory(prefix="hops-") as tmp:
        cmd = [PY, "-m", "growcockpit", "train", plan, "--device", "cpu", "--run-dir", f"{tmp}/r"]
        for s in sets:
            cmd += ["--set", s]
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{tag}: training failed: {done.stderr.strip()[-400:]}")
        record = read_run(Path(tmp) / "r" / "events.jsonl")
    record.update(tag=tag, plan_file=plan, sets=sets, command=shlex.join(cmd[1:]))
    OUT.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1))
    return out


def _claim(tag: str) -> bool:
    """Take a job for this runner (an exclusive marker file): two runners share one queue."""
    OUT.mkdir(parents=True, exist_ok=True)
    if (OUT / f"{tag}.json").exists():
        return False
    try:
        os.close(os.open(OUT / f".{tag}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def queue(path: Path) -> None:
    """Run the first unclaimed job of FILE, re-reading it after each run (jobs can be added
    or reordered while the queue runs), until none is left."""
    while True:
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                tag, plan, *sets = shlex.split(line)
                if _claim(tag):
                    print(f"{tag}: {run(tag, plan, sets)}", flush=True)
                    break
        else:
            return


def record(tag: str, run_dir: Path, plan: str, sets: list[str]) -> Path:
    """Record a run trained outside the queue (its run directory's event log)."""
    rec = read_run(run_dir / "events.jsonl")
    rec.update(
        tag=tag,
        plan_file=plan,
        sets=sets,
        command=f"growcockpit train {plan} " + " ".join(f"--set {s}" for s in sets),
    )
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{tag}.json"
    out.write_text(json.dumps(rec, indent=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("tag")
    r.add_argument("plan")
    r.add_argument("--set", action="append", default=[])
    q = sub.add_parser("queue")
    q.add_argument("file", type=Path)
    rc = sub.add_parser("record")
    rc.add_argument("tag")
    rc.add_argument("run_dir", type=Path)
    rc.add_argument("plan")
    rc.add_argument("--set", action="append", default=[])
    rep = sub.add_parser("report")
    rep.add_argument("--target", type=float, default=0.95)
    rep.add_argument("--gate-from", type=Path, help="records the depth gate reads")
    rep.add_argument("--flops-only", action="store_true", help="claim on FLOPs alone")
    args = ap.parse_args()
    if args.cmd == "run":
        print(run(args.tag, args.plan, args.set))
    elif args.cmd == "record":
        print(record(args.tag, args.run_dir, args.plan, args.set))
    elif args.cmd == "queue":
        queue(args.file)
    else:
        from hops_report import report  # bench/hops_report.py

        print(report(OUT, args.target, args.gate_from, args.flops_only))


if __name__ == "__main__":
    main()
