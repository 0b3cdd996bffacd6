"""The loan's parts on one clock (bench/gpu_check.sh runs this after its wheels and version line).

Why one clock: a GPU loan is one command of at most 600 s inside 15 minutes of device time;
a part that restarts the clock, or whose figures are written only when it ends, wastes it.
Here every part's deadline is the loan's start (GPU_CHECK_T0, stamped by gpu_check.sh) plus
the caps of the parts up to it (loan_parts.py), so time a part leaves flows on and the whole
stays within the stated budget. A part that reaches its deadline is stopped (its process
group: TERM, then KILL) and reads "cut at N s" with whatever it printed before; a part that
crashes reads "FAILED (exit N)" with its log's last lines (the traceback) printed beside it.
If the probe stops the loan (a family's step differs on the device), nothing else runs.

Files under $OUT (at most 8, written as they are produced): loan.log (this process's lines
and the summary), loan.jsonl (every record: the probe's as measured, each part's outcome and
its JSON as soon as it ends, the summary), and one <part>.log per part that ran.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for _path in (REPO, REPO / "bench", HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from loan_parts import LIMIT_S, SUMMARY_S, budget_s, caps, command, step_env  # noqa: E402
from loan_summary import part_item, summary_line  # noqa: E402

MIN_PART_S = 3.0  # a part with less left than this is skipped, not started


class Loan:
    """The loan's outputs: its log (tee'd to stdout) and its JSONL, both flushed per line."""

    def __init__(self, out: Path, t0: float) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.t0 = t0
        self.log = (out / "loan.log").open("a")
        self.jsonl_path = out / "loan.jsonl"

    def say(self, line: str) -> None:
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def record(self, record: dict[str, Any]) -> None:
        with self.jsonl_path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def elapsed(self) -> float:
        return time.time() - self.t0


def _pump(stream: IO[str], sink: IO[str], lines: list[str]) -> None:
    for line in stream:
        sys.stdout.write(line)
        sys.stdout.flush()
        sink.write(line)
        sink.flush()
        lines.append(line.rstrip("\n"))


def run_part(
    cmd: list[str], log_path: Path, seconds: float, env: dict[str, str]
) -> tuple[str, int | None, list[str], float]:
    """Run `cmd` (its own process group) for at most `seconds`, its output tee'd to `log_path`.
    Returns (ok | cut | failed, exit code, its lines, seconds it ran)."""
    started = time.time()
    lines: list[str] = []
    with log_path.open("a") as sink:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        assert proc.stdout is not None
        reader = threading.Thread(target=_pump, args=(proc.stdout, sink, lines), daemon=True)
        reader.start()
        try:
            code: int | None = proc.wait(timeout=max(0.1, seconds))
            state = "ok" if code == 0 else "failed"
        except subprocess.TimeoutExpired:
            _stop(proc)
            code, state = None, "cut"
        reader.join(timeout=10)
    return state, code, lines, time.time() - started


def _stop(proc: subprocess.Popen[str]) -> None:
    """TERM to the part's process group, KILL after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def fold_json(loan: Loan, part: str, tmp: Path) -> None:
    """Each JSON a part wrote in the loan's scratch (two levels deep: not the runs' own
    folders, whose tokenizers and checkpoints are no result), into loan.jsonl, a record each."""
    for path in sorted([*tmp.glob("*.json"), *tmp.glob("*/*.json")]):
        if path.stat().st_mtime < loan.t0:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        loan.record(
            {"part": part, "kind": "json", "file": str(path.relative_to(tmp)), "data": data}
        )
        path.rename(path.with_suffix(".json.folded"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="the CPU rehearsal: tiny shapes")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help=f"--tiny: the rehearsal's whole budget (default {LIMIT_S}); on the GPU the caps "
        "of loan_parts.py",
    )
    ap.add_argument("--parts", default=None, help="comma list: only these parts")
    args, _rest = ap.parse_known_args(argv)
    t0 = float(os.environ.get("GPU_CHECK_T0") or time.time())
    out = Path(os.environ.get("OUT") or Path(tempfile.gettempdir()) / "gpu_check")
    loan = Loan(out, t0)
    cuda = _cuda()
    tiny_budget = (args.budget_s or LIMIT_S) if args.tiny else None
    total = tiny_budget if tiny_budget is not None else float(budget_s())
    plan = caps(tiny_budget)
    wanted = set(args.parts.split(",")) if args.parts else {p.name for p, _ in plan}
    loan.say(
        f"loan: budget {total:.0f} s ({'rehearsal, --tiny' if args.tiny else 'GPU'}), one clock "
        f"from the command's start; parts: "
        + ", ".join(f"{p.name} {s:.0f} s" for p, s in plan if p.name in wanted)
        + f"; results in {out}"
    )
    loan.record(
        {
            "part": "loan",
            "kind": "start",
            "budget_s": total,
            "tiny": args.tiny,
            "caps": {p.name: s for p, s in plan},
        }
    )
    # one clock: the parts share what the preamble left of the budget (their stated caps when
    # it kept to its own; all of them shrunk alike when it overran on a loaded machine)
    room = total * (1 - SUMMARY_S / budget_s()) - loan.elapsed()
    factor = max(0.0, min(1.0, room / sum(s for _, s in plan)))
    plan = [(p, s * factor) for p, s in plan]
    scale = total / budget_s()
    deadline = time.time()
    items: list[str] = []
    stopped = False
    with tempfile.TemporaryDirectory(prefix="gpu-loan-") as scratch:
        tmp = Path(scratch)
        for i, (part, cap) in enumerate(plan, 1):
            deadline += cap
            if part.name not in wanted:
                continue
            head = f"== {i}/{len(plan)} {part.name}: {part.what}"
            left = deadline - time.time()
            if stopped:
                loan.say(f"{head}\nnot run: the probe stopped the loan")
                items.append(f"{part.name} not run (probe stopped)")
                continue
            if left < MIN_PART_S * max(scale, 0.2):
                loan.say(f"{head}\nskipped: {left:.0f} s left of its cap")
                items.append(f"{part.name} skipped ({left:.0f} s left)")
                loan.record({"part": part.name, "kind": "outcome", "state": "skipped"})
                continue
            cmd = command(part.name, args.tiny, left, tmp, loan.jsonl_path, cuda)
            if cmd is None:
                loan.say(f"{head}\nskipped: nothing to run (no sample_plans/cpu-hops*.toml)")
                items.append(f"{part.name} skipped (not landed)")
                continue
            loan.say(f"{head} (≤ {left:.0f} s, at {loan.elapsed():.0f} s)")
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(
                    os.pathsep
                ),
            }
            if part.name == "step":
                env.update(step_env(args.tiny, left, tmp))
            state, code, lines, took = run_part(cmd, out / f"{part.name}.log", left, env)
            fold_json(loan, part.name, tmp)
            item = part_item(part.name, state, code, lines, took, tmp)
            if state == "failed":
                loan.say(f"{part.name}: FAILED (exit {code}); the last lines of {part.name}.log:")
                for line in lines[-25:]:
                    loan.say(f"  | {line}")
            elif state == "cut":
                loan.say(f"{part.name}: cut at {took:.0f} s (its cap); what it measured is above")
            loan.say(item)
            loan.record(
                {
                    "part": part.name,
                    "kind": "outcome",
                    "state": state,
                    "exit": code,
                    "seconds": took,
                    "item": item,
                }
            )
            items.append(item)
            stopped = part.name == "probe" and code == 4
    line = summary_line(loan.elapsed(), total, items)
    loan.say(line)
    loan.record({"part": "loan", "kind": "summary", "line": line})
    return 4 if stopped else 0


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


if __name__ == "__main__":
    sys.exit(main())
