"""Is a run bit-for-bit reproducible? Train the same tiny plan N times and compare.

    python bench/determinism.py --runs 20 [--kills 4] [--threads 1] [--other-threads 2] [--resume-unpinned]

Every run is a real `growcockpit train` subprocess. Runs 1..N train
uninterrupted; `--kills K` more runs are SIGKILLed at a random step and
continued with `growcockpit resume` from their last checkpoint. Each run is
compared with run 1 on every step's loss (as logged, bitwise) and on the bytes
of `final/model.safetensors`. `--other-threads T` adds one run with another
intra-op thread count, which is *expected* to differ at rounding level: CPU
kernels (MKL GEMM, reductions) split work by thread count, so the thread count
is part of what makes a run reproducible (README, Reliability). Every
checkpoint records it and `resume` adopts it unless OMP_NUM_THREADS is set:
`--resume-unpinned` resumes the kill runs without OMP_NUM_THREADS (torch's
default count, the number of cores) to show that.

Prints one line per run and a summary such as
`plain: 8/8 bitwise identical · kill+resume: 2/2 · other threads: differs (max |Δloss| 3e-07)`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from growcockpit.protocol.rundir import RunPaths

REPO = Path(__file__).resolve().parent.parent

PLAN = """name = "determinism"
seed = 0

[model]
family = "bert"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = 4

[data]
source = "builtin"
tokenizer = "train:2000"
seq_len = 64

[optim]
lr = 1e-3
warmup_steps = 5
batch_size = 8

[metrics]
every_steps = 2
system_every_s = 0
eval_every_steps = 10
eval_batches = 2

[checkpoint]
every_steps = 5
keep = 20

[[stages]]
name = "shallow"
layers = 2
enter = "init"
steps = {half}

[[stages]]
name = "grow"
layers = 4
enter = "stack"
train = "new"
steps = {half}
"""


@dataclass
class Outcome:
    name: str
    losses: dict[int, float]
    weights: str
    seconds: float

    def diff(self, ref: Outcome) -> tuple[bool, float]:
        """(bitwise identical, max |Δloss| over the common steps)."""
        steps = sorted(set(ref.losses) & set(self.losses))
        delta = max((abs(self.losses[s] - ref.losses[s]) for s in steps), default=0.0)
        same = self.losses == ref.losses and self.weights == ref.weights
        return same, delta


def env_for(threads: int, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        GROWCOCKPIT_CACHE=str(cache),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def train_cmd(plan: Path, run: Path) -> list[str]:
    return [sys.executable, "-m", "growcockpit", "train", str(plan), "--run-dir", str(run)]


def outcome(name: str, run: Path, seconds: float) -> Outcome:
    losses: dict[int, float] = {}
    for line in RunPaths(run).events.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "step":
            losses[event["step"]] = event["loss"]  # a resumed step replaces the killed one
    weights = hashlib.sha256((RunPaths(run).final / "model.safetensors").read_bytes()).hexdigest()
    return Outcome(name, losses, weights, seconds)


def plain_run(plan: Path, run: Path, env: dict[str, str], name: str) -> Outcome:
    t0 = time.perf_counter()
    subprocess.run(train_cmd(plan, run), env=env, check=True, capture_output=True)
    return outcome(name, run, time.perf_counter() - t0)


def kill_run(
    plan: Path, run: Path, env: dict[str, str], name: str, kill_at: int, unpinned: bool = False
) -> tuple[Outcome, int]:
    """SIGKILL once step `kill_at` is logged, then `resume`; returns the step resumed from."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        train_cmd(plan, run), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    events = RunPaths(run).events
    while proc.poll() is None:
        if events.exists() and f'"step","step":{kill_at},' in events.read_text():
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    resume_env = dict(env)
    if unpinned:
        resume_env.pop("OMP_NUM_THREADS", None)
        resume_env.pop("MKL_NUM_THREADS", None)
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "resume", str(run)],
        env=resume_env,
        check=True,
        capture_output=True,
        text=True,
    )
    resumed = int(res.stdout.split("from step-")[1].split()[0]) if "from step-" in res.stdout else 0
    return outcome(name, run, time.perf_counter() - t0), resumed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="uninterrupted runs (default 20)")
    ap.add_argument("--kills", type=int, default=2, help="kill+resume runs (default 2)")
    ap.add_argument("--steps", type=int, default=30, help="steps per run (two stages)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads of every run")
    ap.add_argument("--other-threads", type=int, default=0, help="one more run with this count")
    ap.add_argument("--seed", type=int, default=0, help="picks the kill steps")
    ap.add_argument(
        "--resume-unpinned", action="store_true", help="resume kill runs without OMP_NUM_THREADS"
    )
    ap.add_argument("--workdir", type=Path, help="keep the runs here (default: a temp dir)")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="gc-determinism-"))
    work.mkdir(parents=True, exist_ok=True)
    plan = work / "plan.toml"
    plan.write_text(PLAN.format(half=args.steps // 2))
    env = env_for(args.threads, work / "cache")
    rng = random.Random(args.seed)

    ref: Outcome | None = None
    tally: dict[str, list[bool]] = {"plain": [], "kill+resume": []}
    deltas: list[float] = []

    def report(kind: str, out: Outcome, note: str = "") -> None:
        nonlocal ref
        if ref is None:
            ref = out
            print(f"{out.name}: reference ({len(out.losses)} steps, {out.seconds:.1f} s){note}")
            tally[kind].append(True)
            return
        same, delta = out.diff(ref)
        deltas.append(delta)
        tally[kind].append(same)
        verdict = "identical" if same else f"DIFFERS (max |Δloss| {delta:.3g})"
        print(f"{out.name}: {verdict} ({out.seconds:.1f} s){note}", flush=True)

    for i in range(args.runs):
        report("plain", plain_run(plan, work / f"run-{i + 1}", env, f"run {i + 1}"))
    for k in range(args.kills):
        kill_at = rng.randint(6, args.steps - 2)
        out, resumed = kill_run(
            plan, work / f"kill-{k + 1}", env, f"kill {k + 1}", kill_at, args.resume_unpinned
        )
        report("kill+resume", out, f"; killed at step {kill_at}, resumed from step-{resumed}")
    summary = " · ".join(
        f"{kind}: {sum(v)}/{len(v)} bitwise identical" for kind, v in tally.items()
    )
    if args.other_threads:
        other = plain_run(
            plan, work / "other-threads", env_for(args.other_threads, work / "cache"), "other"
        )
        assert ref is not None
        same, delta = other.diff(ref)
        summary += f" · {args.other_threads} threads instead of {args.threads}: " + (
            "identical" if same else f"differs (max |Δloss| {delta:.3g})"
        )
    print(f"threads {args.threads}, {args.steps} steps: {summary}")
    print(f"runs kept in {work}")
    return 0 if all(all(v) for v in tally.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
