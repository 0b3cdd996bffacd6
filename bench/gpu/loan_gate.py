"""The loan's depth gate: the corpus prepared, the gate sized from the probe, its runs, its verdict.

1. With GPU_CHECK_CORPUS (the carried Debian-docs .txt.xz), unpack and tokenize it once per
   family, the families side by side (bench/ttl/corpus.py prepare); without it the built-in
   corpus (said so in the line).
2. Size (loan_sizing.py): from the probe's ms per step alone, the largest budget at which the
   baseline, every control, late and MSLT all finish in what is left, the runs sharing the
   device only as far as the probe says they fit; two families if both fit, else one.
3. time_to_loss per family (every run capped), families side by side; a family whose command
   is cut is reported from its finished runs (`--reuse-only`).
4. The verdict per family: `undecided` unless every requested control finished (a killed
   control has no final loss), else the gate's (pays / does not pay); the gate table.

Last line: `gate: <family>.depth_gate=pays|does_not_pay|undecided(…) … <its speedups>`, every
speedup `unclaimed(…)` unless the gate pays (loan_summary.py carries that into the loan's line).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for _path in (REPO, REPO / "bench", REPO / "bench" / "ttl", HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from loan_sizing import Probe, size_gate  # noqa: E402
from loan_summary import mark_unclaimed  # noqa: E402
from loan_verdict import family_verdict  # noqa: E402

GPU = ("gpu", ["baseline", "depth-4", "depth-1", "late", "mslt-longshallow-emb"], 600, 6000)
TINY = ("quick", ["baseline", "depth-2", "depth-1", "late", "mslt-longshallow-emb"], 20, 400)
REPORT_IMPORTS = 2.5  # kept back, in import times: a --reuse-only report, the tables
# time_to_loss adds the full-depth short-schedule controls (full@0.5, full@0.25, full@plan <
# 0.95) by default: priced too, full@plan at its upper bound
SHORT = ["full@0.5", "full@0.25", "full@0.95"]


def stream(proc: subprocess.Popen[str], tag: str) -> threading.Thread:
    """Print the process's lines as they come, tagged with the family."""

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(f"[{tag}] {line}", end="", flush=True)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def run_all(cmds: dict[str, list[str]], until: float) -> dict[str, int | None]:
    """Every command at once, each killed at `until`; exit codes (None: killed)."""
    procs = {
        tag: subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        for tag, cmd in cmds.items()
    }
    pumps = [stream(p, tag) for tag, p in procs.items()]
    codes: dict[str, int | None] = {}
    for tag, p in procs.items():
        try:
            codes[tag] = p.wait(timeout=max(0.1, until - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes[tag] = None
    for t in pumps:
        t.join(timeout=5)
    return codes


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def append(path: Path | None, record: dict[str, Any]) -> None:
    if path is not None:
        with path.open("a") as f:
            f.write(json.dumps({"part": "gate", **record}) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, required=True, help="this part's time, all of it")
    ap.add_argument("--probe", type=Path, required=True, help="the probe's JSONL (loan.jsonl)")
    ap.add_argument("--work", type=Path, required=True, help="runs and JSON (the loan's scratch)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--families", default="gpt2,llama")
    args = ap.parse_args(argv)
    end = time.time() + args.seconds
    args.work.mkdir(parents=True, exist_ok=True)
    scale, methods, min_budget, max_budget = TINY if args.tiny else GPU
    families = tuple(args.families.split(","))
    corpus = os.environ.get("GPU_CHECK_CORPUS") or None
    cuda = not args.tiny and _cuda()
    probe = Probe.from_records(records(args.probe), os.cpu_count() or 1)
    if probe is None:
        print("gate: undecided(no probe: the depth ladder was not measured)")
        return 0
    report_s = max(10.0, REPORT_IMPORTS * probe.startup_s)
    if corpus:
        print(f"gate: preparing {corpus} for {','.join(families)} (bench/ttl/corpus.py prepare)")
        prep = {
            f: [
                sys.executable,
                "bench/ttl/corpus.py",
                "prepare",
                corpus,
                "--families",
                f,
                "--scale",
                scale,
            ]
            for f in families
        }
        codes = run_all(prep, min(end - report_s, time.time() + 0.4 * args.seconds))
        if any(c != 0 for c in codes.values()):
            print(f"gate: undecided(the corpus was not prepared: {codes})")
            return 0
    runs_s = end - time.time() - report_s
    size = size_gate(probe, runs_s, methods + SHORT, scale, families, min_budget, max_budget)
    print(size.line(), flush=True)
    append(args.probe, {"kind": "sizing", **size.__dict__})
    if not size.families:
        print(f"gate: undecided({size.reason})")
        return 0
    base = [
        sys.executable,
        "bench/time_to_loss.py",
        "--scale",
        scale,
        "--methods",
        ",".join(methods),
        "--no-depth-controls",
        "--baseline-schedules",
        "wsd",
        "--budget",
        str(size.budget),
        "--seeds",
        "0",
        "--parallel",
        str(size.parallel),
        "--timeout-s",
        str(size.run_timeout_s),
        "--device",
        "cuda" if cuda else "cpu",
        *(["--corpus", corpus] if corpus else []),
        *(["--threads", "1", "--evals", "4"] if args.tiny else []),
    ]

    def cmd(f: str, *extra: str) -> list[str]:
        return [
            *base,
            "--family",
            f,
            "--runs-dir",
            str(args.work / "runs" / f),
            "--json",
            str(args.work / f"{f}.json"),
            *extra,
        ]

    codes = run_all({f: cmd(f) for f in size.families}, end - report_s)
    cut = [f for f, c in codes.items() if c is None]
    if cut:  # what finished before the cut, from the runs on disk
        run_all({f: cmd(f, "--reuse-only") for f in cut}, end - 3)
    items = []
    for f in size.families:
        path = args.work / f"{f}.json"
        data = json.loads(path.read_text()) if path.exists() else None
        fam = (data or {}).get("families", {}).get(f)
        verdict = family_verdict(fam, methods)
        append(
            args.probe,
            {
                "kind": "verdict",
                "family": f,
                "verdict": verdict.word,
                "why": verdict.why,
                "cut": f in cut,
            },
        )
        line = str((data or {}).get("summary", ""))
        speed = " ".join(
            x
            for x in line.removeprefix("time_to_loss: ").split()
            if x.startswith(f"{f}.") and "depth_gate" not in x and "best_fixed" not in x
        )
        item = f"{f}.depth_gate={verdict.word}" + (f"({verdict.why})" if verdict.why else "")
        if verdict.best_depth is not None:
            item += f" {f}.best_fixed_depth={verdict.best_depth}"
        speed = speed if verdict.word == "pays" else mark_unclaimed(speed)
        items.append(f"{item} {speed}".strip())
        if path.exists() and time.time() < end - 2:
            table = [
                sys.executable,
                "bench/ttl/ttl_gate_table.py",
                str(path),
                "--family",
                f,
                "--point",
                f"{scale}, {Path(corpus).name if corpus else 'built-in corpus'}, "
                f"{size.budget} steps",
            ]
            try:
                subprocess.run(table, cwd=REPO, timeout=max(1.0, end - time.time() - 1))
            except subprocess.TimeoutExpired:
                print(f"gate: {f}'s table: no time left (the verdict above stands)")
    print(f"gate: budget={size.budget} " + " ; ".join(items), flush=True)
    return 0


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


if __name__ == "__main__":
    sys.exit(main())
