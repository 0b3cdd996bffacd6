"""The loan's summary: one item per part, then one line, with the gate's word on every speedup.

A part's item is the line it prints for the README (or, for the probe, its measured figures),
preceded by how it ended: nothing (it finished), "cut at N s" (its cap ended it: what it
printed before stands), "FAILED (exit N)" (a crash: loan.py prints its traceback beside it).
A growth speedup is only a claim where the depth gate, run in this same loan, says depth pays
for every family it ran: otherwise (undecided, does not pay, cut, missing) every `…speedup=V`
in the line reads `…speedup=unclaimed(V)`, the figure kept beside the word.
"""

from __future__ import annotations

import re
from pathlib import Path

PREFIX = {
    "engine": "gpu_engine: batch=",
    "gate": "gate: ",
    "hops": "hops: ",
    "stages": "gpu_check: ",
    "step": "gpu_step.sh: ",
}
LADDER = re.compile(r"^probe: gpt2 (\w+) depth (\d+)/(\d+) alone: ([\d.]+) ms/step")
SPEEDUP = re.compile(r"(\b[\w.-]*speedup[\w.-]*)=(?!unclaimed)([^\s|;,\]]+)")


def probe_text(lines: list[str]) -> str:
    """Versions, the step checks' count, the ladder's ms/step alone."""
    checks = [ln for ln in lines if re.match(r"^probe: \w+ +(fp32|bf16) on ", ln)]
    ok = sum(ln.endswith(": ok") for ln in checks)
    stop = next((ln for ln in lines if ln.startswith("probe: STOP")), None)
    ladder = [m.groups() for m in map(LADDER.match, lines) if m]
    ver = next((ln for ln in lines if ln.startswith("probe: python ")), "")
    tv = re.search(r"torch (\S+) transformers (\S+)", ver)
    parts = [f"torch={tv.group(1)} transformers={tv.group(2)}"] if tv else []
    parts.append(f"step_checks_ok={ok}/{len(checks)}")
    if ladder:
        scale = ladder[0][0]
        parts.append(
            f"{scale}_ms_per_step_alone=" + ",".join(f"{d}/{n}:{ms}" for _, d, n, ms in ladder)
        )
    if stop:
        parts.append(stop.removeprefix("probe: "))
    return " ".join(parts)


def part_item(
    name: str, state: str, code: int | None, lines: list[str], took: float, tmp: Path
) -> str:
    """The part's item of the summary line."""
    if name == "probe":
        text = probe_text(lines)
    elif name == "engine":
        text = ";".join(
            ln.removeprefix("gpu_engine: ") for ln in lines if ln.startswith(PREFIX[name])
        )
    else:
        found = [ln for ln in lines if ln.startswith(PREFIX[name])]
        if not found and name == "step":
            found = [ln for ln in lines if ln.startswith("step_vs_reference: ")]
        text = found[-1].split(": ", 1)[1] if found else ""
    if name == "gate" and state != "ok" and not text.startswith("undecided"):
        text = "undecided (the gate part did not finish) " + text
    head = {
        "ok": name,
        "cut": f"{name} cut at {took:.0f} s",
        "failed": f"{name} FAILED (exit {code})",
    }[state]
    return f"{head}: {text or 'nothing measured'}"


def gate_pays(items: list[str]) -> bool:
    """Every family the gate ran says depth pays (a missing or cut gate does not)."""
    gate = next((i for i in items if i.startswith("gate")), "")
    verdicts = re.findall(r"\b\w+\.depth_gate=(\w+)", gate)
    return bool(verdicts) and all(v == "pays" for v in verdicts) and "undecided" not in gate


def mark_unclaimed(text: str) -> str:
    """Every `…speedup=V` as `…speedup=unclaimed(V)`."""
    return SPEEDUP.sub(lambda m: f"{m.group(1)}=unclaimed({m.group(2)})", text)


def summary_line(elapsed: float, budget: float, items: list[str]) -> str:
    """`gpu_check.sh: <s> s of <budget> s | item | item …`, speedups gated."""
    if not gate_pays(items):
        items = [mark_unclaimed(i) for i in items]
    return f"gpu_check.sh: {elapsed:.0f} s of {budget:.0f} s | " + " | ".join(items)
