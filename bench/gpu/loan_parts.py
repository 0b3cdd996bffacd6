"""The loan's parts, their caps and their commands: one table, read by bench/gpu/loan.py (which
runs them on one clock) and by the test that checks the budget stated in gpu_check.sh's header.

Caps are seconds on the GPU. Each part's deadline is the parts' start plus the caps of every
part up to it, so a part that ends early leaves its time to the next ones and the whole never
passes the budget (a preamble that overran shrinks every cap alike: bench/gpu/loan.py). `--tiny` (the CPU rehearsal) shares a
smaller budget out by `tiny_share` instead: on the CPU the parts' costs stand in other ratios
(a process's start-up is 11 s here, not 2 s).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 540  # one command's budget: a 600 s call with a cold start, and room for a rerun
PREAMBLE_S = 15  # gpu_check.sh before loan.py: the wheels, the version line, CUDA's start
SUMMARY_S = 10  # after the last part: folding the parts' JSON, the summary line


@dataclass(frozen=True)
class Part:
    name: str
    gpu_s: int  # its cap on the GPU
    tiny_share: float  # its share of the rehearsal's budget
    what: str


PARTS: tuple[Part, ...] = (
    Part("probe", 45, 0.27, "versions; a step per family on the device vs the CPU; ms/step alone"),
    Part("engine", 40, 0.08, "the engine on the BERT plan: plain pass, then instrumented"),
    Part("gate", 240, 0.38, "the depth gate, late and MSLT, sized from the probe"),
    Part("hops", 40, 0.05, "the depth-needing task (sample_plans/cpu-hops*.toml), if present"),
    Part("stages", 60, 0.10, "every stage of two grown plans vs its full-depth baseline"),
    Part("step", 90, 0.12, "the engine's step against the reference loop (eager)"),
)


def budget_s() -> int:
    """The whole command on the GPU: preamble, every part's cap, the summary."""
    return PREAMBLE_S + sum(p.gpu_s for p in PARTS) + SUMMARY_S


def caps(tiny_budget: float | None) -> list[tuple[Part, float]]:
    """(part, its seconds) on the GPU, or within a rehearsal's `tiny_budget`."""
    if tiny_budget is None:
        return [(p, float(p.gpu_s)) for p in PARTS]
    usable = tiny_budget * (1 - (PREAMBLE_S + SUMMARY_S) / budget_s())
    total = sum(p.tiny_share for p in PARTS)
    return [(p, usable * p.tiny_share / total) for p in PARTS]


def hops_plans() -> list[Path]:
    """The depth-needing task's sample plans, when that task has landed."""
    return sorted((REPO / "sample_plans").glob("cpu-hops*.toml"))


def command(
    name: str, tiny: bool, seconds: float, tmp: Path, jsonl: Path, cuda: bool
) -> list[str] | None:
    """The part's command line given its `seconds` (None: the part has nothing to run). The
    probe appends its records to the loan's `jsonl` as it measures; the gate reads them there."""
    py = sys.executable
    s = str(max(1, int(seconds)))
    cpu = [] if cuda else ["--device", "cpu"]
    if name == "probe":
        scale = ["--scale", "quick", "--ladder-s", "1"] if tiny else ["--scale", "gpu"]
        return [py, "bench/gpu/gpu_probe.py", "--jsonl", str(jsonl), *scale, *cpu]
    if name == "engine":
        size = ["--tiny"] if tiny else ["--steps", "30", "--batch-sizes", "32,128"]
        return [py, "bench/gpu/gpu_engine.py", *size, *cpu, "--passes", "plain,instrumented"]
    if name == "gate":
        return [
            py,
            "bench/gpu/loan_gate.py",
            "--seconds",
            s,
            "--probe",
            str(jsonl),
            "--work",
            str(tmp / "gate"),
            *(["--tiny"] if tiny else []),
        ]
    if name == "hops":
        if not hops_plans():
            return None
        return [py, "bench/gpu/loan_hops.py", "--seconds", s, "--work", str(tmp / "hops"), *cpu]
    if name == "stages":
        budget = str(max(5, int(seconds) - 25))
        return [
            py,
            "bench/gpu/gpu_check.py",
            "--budget-s",
            budget,
            "--plans",
            "bert,llama",
            "--no-compile",
            "--json",
            str(tmp / "gpu_check.json"),
            *(["--tiny", "--device", "cpu"] if tiny else []),
        ]
    if name == "step":
        return ["bash", "bench/gpu/gpu_step.sh", *(["--tiny"] if tiny else [])]
    raise ValueError(f"unknown part {name!r}")


def step_env(tiny: bool, seconds: float, tmp: Path) -> dict[str, str]:
    """gpu_step.sh's settings inside the loan: its folder in the loan's scratch (its JSON is
    folded into loan.jsonl), its limit the part's seconds less the warm-up's, eager only."""
    return {
        "GPU_STEP_DIR": str(tmp / "step"),
        "GPU_STEP_LIMIT_S": str(max(5, int(seconds) - 15)),
        "GPU_STEP_COMPILE": "none",
        "GPU_STEP_ROUNDS": "2",
        **({"GPU_STEP_PLANS": "gpt2"} if tiny else {}),
    }
