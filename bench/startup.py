"""Start-up cost: a warm-cache launch to its first `stage_started`, against importing torch.

One round times, back to back on the same machine, (a) `python -c "import torch,
transformers"` from launch to the end of its imports (a wall-clock stamp the process
prints, so its teardown is not counted) and (b) `growcockpit train PLAN` from launch
to the `t` of its first `stage_started` event (every stage cut to one step, so the run ends
soon after). The rounds are interleaved, so a loaded machine slows both alike;
one untimed launch first warms the tokenizer and token cache and the page
cache. The ratio b/a is what the product adds to the libraries it needs; the
phase breakdown comes from the run's own `startup` events (none from a
backend older than them).

Each round also times (c) the floor: `import torch, transformers` and the plan's
family's transformers modeling module, which the run must import to build its
model. That module pulls in `torch.distributed.tensor`, `torch._dynamo` and
`sympy` unconditionally (transformers 5), so c/a is the least any launch that
builds a Hugging Face model can score, and b/c is what growcockpit itself adds.
Prints one summary line per checkout:

    startup[this checkout]: ratio median 1.96 (...; target <= 1.5) · floor 1.90 · over floor 1.03 ...

Usage: python bench/startup.py [--plan sample_plans/cpu-demo.toml] [--rounds 5]
       [--set KEY=VALUE ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO, bench_env

from growcockpit.plan import load_plan
from growcockpit.protocol import RunPaths, read_all
from growcockpit.protocol.events import StageStarted, StartupPhase

TARGET = 1.5
BASELINE = "import torch, transformers"


def time_imports(env: dict[str, str], cwd: Path, code: str = BASELINE) -> float:
    """Launch → the end of `code`'s imports, stamped from inside the process as a launch's
    `stage_started` is: the interpreter's teardown (seconds with torch loaded) is in neither."""
    launched = time.time()
    done = subprocess.run(
        [sys.executable, "-c", f"{code}; import time; print(repr(time.time()))"],
        check=True,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    return float(done.stdout.strip().splitlines()[-1]) - launched


def floor_code(plan: Path) -> str:
    """The baseline plus the plan's family's modeling module (what building its model imports)."""
    from growcockpit.families import spec_for

    module = spec_for(load_plan(plan).model.family).model_class.__module__
    return f"{BASELINE}; import {module}"


def time_launch(plan: Path, sets: list[str], run_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """Launch → first stage_started (seconds) and the run's start-up phases."""
    cmd = [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run_dir)]
    cmd += [f"--set={item}" for item in sets]
    launched = time.time()
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=900, cwd=run_dir.parent
    )
    if done.returncode != 0:
        raise SystemExit(f"bench/startup.py: the run failed:\n{done.stderr[-2000:]}")
    events = read_all(RunPaths(run_dir).events)  # the product's reader, as the cockpit's
    stage = next(e for e in events if isinstance(e, StageStarted))
    phases = {
        e.phase: float(e.seconds)
        for e in events
        if isinstance(e, StartupPhase) and e.done and e.seconds is not None
    }
    return {"stage_started_s": float(stage.t) - launched, "phases": phases}


def one_step_stages(plan: Path) -> list[str]:
    return [f"stages.{i}.steps=1" for i in range(len(load_plan(plan).stages))]


def summary(rounds: list[dict[str, Any]], key: str = "launch") -> dict[str, Any]:
    """Medians and minima of one checkout's rounds (`key`: "launch", or "before")."""
    ratios = [r[key]["stage_started_s"] / r["import_s"] for r in rounds]
    launch = [r[key]["stage_started_s"] for r in rounds]
    imports = [r["import_s"] for r in rounds]
    floors = [r["floor_s"] for r in rounds]
    names = [name for r in rounds for name in r[key]["phases"]]
    phases = {
        name: statistics.median(r[key]["phases"].get(name, 0.0) for r in rounds)
        for name in dict.fromkeys(names)
    }
    return {
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_of_mins": min(launch) / min(imports),
        "stage_started_median_s": statistics.median(launch),
        "stage_started_min_s": min(launch),
        "import_median_s": statistics.median(imports),
        "import_min_s": min(imports),
        "floor_median_s": statistics.median(floors),
        "floor_ratio_median": statistics.median(
            f / i for f, i in zip(floors, imports, strict=True)
        ),
        "over_floor_median": statistics.median(b / f for b, f in zip(launch, floors, strict=True)),
        "phases_median_s": phases,
        "target": TARGET,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--plan", type=Path, default=REPO / "sample_plans" / "cpu-demo.toml")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--before",
        type=Path,
        help="another checkout (e.g. the main branch) launched in the same rounds, for a "
        "before/after in one run (its own plan keys only: no --set it would not know)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    env = dict(bench_env(args.threads), PYTHONPATH=str(REPO))
    checkouts = {"launch": (env, sets := one_step_stages(args.plan) + args.sets)}
    if args.before is not None:
        before_env = dict(env, PYTHONPATH=str(args.before.resolve()))
        checkouts["before"] = (before_env, one_step_stages(args.plan))
    floor = floor_code(args.plan)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gc-startup-") as tmp:
        for key, (e, s) in checkouts.items():  # tokenizer, token cache, pages
            time_launch(args.plan, s, Path(tmp) / f"warm-{key}", e)
        for i in range(args.rounds):
            row: dict[str, Any] = {"import_s": time_imports(env, Path(tmp))}
            row["floor_s"] = time_imports(env, Path(tmp), floor)
            for key, (e, s) in checkouts.items():
                row[key] = time_launch(args.plan, s, Path(tmp) / f"{key}{i}", e)
            rounds.append(row)
            times = " · ".join(f"{key} {row[key]['stage_started_s']:.2f} s" for key in checkouts)
            print(
                f"round {i + 1}: import {row['import_s']:.2f} s · floor {row['floor_s']:.2f} s"
                f" · {times}",
                flush=True,
            )
    out: dict[str, Any] = {"plan": str(args.plan), "sets": sets, "floor": floor, "rounds": rounds}
    for key in checkouts:
        s = out[f"summary_{key}"] = summary(rounds, key)
        name = "this checkout" if key == "launch" else f"before ({args.before})"
        breakdown = " · ".join(f"{k} {v:.2f}" for k, v in s["phases_median_s"].items())
        print(f"{name}: phases (median s): {breakdown or 'none reported'}")
        print(
            f"startup[{name}]: ratio median {s['ratio_median']:.2f} (min {s['ratio_min']:.2f}, "
            f"of mins {s['ratio_of_mins']:.2f}; target <= {TARGET}) · floor "
            f"{s['floor_ratio_median']:.2f} · over floor {s['over_floor_median']:.2f} · "
            "launch->stage_started "
            f"median {s['stage_started_median_s']:.2f} s (min {s['stage_started_min_s']:.2f}) · "
            f"`{BASELINE}` median {s['import_median_s']:.2f} s (min {s['import_min_s']:.2f}) · "
            f"floor (`{floor}`) median {s['floor_median_s']:.2f} s · "
            f"{len(rounds)} rounds"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
