"""The headless comparison (`growcockpit compare`): a text table or JSON of the verdicts."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from growcockpit.compare.gated import Gated
from growcockpit.compare.progress import RunProgress


def _flops(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.3g}"


def format_text(runs: list[RunProgress], gated: Gated, target: RunProgress) -> str:
    """One line per run: plan (and its role), steps, training time, estimated FLOPs, final
    val loss, verdict; then the depth gate's line."""
    goal = target.final_val_loss
    head = f"target: {target.name}'s final validation loss " + (
        f"{goal:.3f} (step {target.evals[-1].step})" if goal is not None else "(none yet)"
    )
    rows = [("run", "plan", "steps", "train s", "est. FLOPs", "final val", "verdict")]
    for run, v, role in zip(runs, gated.verdicts, gated.roles, strict=True):
        plan = run.plan_name or "-"
        if role.startswith(("control", "short")):
            plan += f" [{role}]"
        total = f"/{run.total_steps}" if run.total_steps and run.status == "running" else ""
        rows.append(
            (
                run.name,
                plan,
                f"{run.step}{total}",
                f"{run.wall_s:.0f}",
                _flops(run.flops),
                "-" if run.final_val_loss is None else f"{run.final_val_loss:.3f}",
                v.text,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [head]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    lines.append(gated.note)
    return "\n".join(line.rstrip() for line in lines)


def to_json(runs: list[RunProgress], gated: Gated, target: RunProgress) -> dict[str, Any]:
    gate = gated.gate
    return {
        "target": {"run": target.name, "final_val_loss": target.final_val_loss},
        "depth_gate": None if gate is None else {**asdict(gate), "pays": gate.pays},
        "depth_gate_text": gated.note,
        "claims": {
            name: {
                "status": c.status,
                "text": c.text,
                "winner": c.winner,
                "metric": c.target.metric,
                "target": c.target.value,
            }  # fmt: skip
            for name, c in (gated.claims or {}).items()
        },
        "runs": [
            {
                "run": run.name,
                "plan": run.plan_name,
                "status": run.status,
                "step": run.step,
                "total_steps": run.total_steps,
                "train_seconds": run.wall_s,
                "estimated_flops": run.flops,
                "evals": [asdict(p) for p in run.evals],
                "role": role,
                "verdict": asdict(v),
            }
            for run, v, role in zip(runs, gated.verdicts, gated.roles, strict=True)
        ],
    }
