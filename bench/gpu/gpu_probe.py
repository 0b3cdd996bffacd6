"""Part 1 of the loan (bench/gpu_check.sh): does it run, and how fast — in its first ~30 s.

1. Versions: python, torch, transformers, tokenizers, CUDA, the GPU's name and its datasheet
   dense bf16 peak, with a warning for each that differs from what CI tests.
2. One engine step per family (GPT-2, BERT, Llama) at tiny shapes, fast block forwards on, on
   the device in fp32 and bf16, against the same step on the CPU (probe_checks.py). A
   mismatch or a crash stops the loan here, with one line naming the family and the
   operator (exit 4).
3. The depth ladder at the gate's scale (`--scale`, GPT-2): ms per step of a 1-, half- and
   full-depth model, each alone on the device, its peak memory and (CUDA) its busy share;
   and the start-up of one training process. bench/gpu/loan_sizing.py sizes the gate from
   these, and these alone are the scale's speed.

Every record is appended to `--jsonl` as it is measured (one JSON object a line, flushed), so a
cut keeps what was measured before it.

    python bench/gpu/gpu_probe.py --jsonl /tmp/probe.jsonl              # on the GPU
    python bench/gpu/gpu_probe.py --jsonl /tmp/p.jsonl --scale quick    # the CPU rehearsal
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, REPO / "bench", REPO / "bench" / "gpu"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from gpu_datasheet import datasheet_for  # noqa: E402
from gpu_roofline import busy_share  # noqa: E402
from probe_checks import FAMILIES, check_family  # noqa: E402

from growcockpit.backend.control.reporter import RunReporter  # noqa: E402
from growcockpit.backend.data.blocks import load_blocks  # noqa: E402
from growcockpit.backend.device import prepare_device  # noqa: E402
from growcockpit.backend.loop.engine import Trainer  # noqa: E402

CI_TRANSFORMERS = "5.25"  # the transformers the suite runs with (pyproject allows >=5,<6)


class Records:
    """One JSON object a line, flushed as it is written: a cut loses nothing measured."""

    def __init__(self, path: Path | None) -> None:
        self.file = path.open("a") if path else None

    def write(self, record: dict[str, Any]) -> None:
        if self.file:
            self.file.write(json.dumps({"part": "probe", **record}) + "\n")
            self.file.flush()


def ci_torch() -> str:
    """torch's pin in pyproject.toml (what CI installs)."""
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.strip().startswith('"torch=='):
            return line.split("==")[1].split('"')[0]
    return "?"


def versions(device: torch.device) -> dict[str, Any]:
    import tokenizers
    import transformers

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    sheet = datasheet_for(name) if device.type == "cuda" else None
    return {
        "kind": "versions",
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "cuda": torch.version.cuda,
        "device": name,
        "datasheet": sheet.name if sheet else None,
        "datasheet_bf16_tflops": sheet.bf16_tflops if sheet else None,
        "memory_gib": torch.cuda.get_device_properties(device).total_memory / 2**30
        if device.type == "cuda"
        else None,
    }


def version_warnings(v: dict[str, Any]) -> list[str]:
    """One line per version that differs from CI's (a major.minor difference is named)."""
    out = []
    tested = {"torch": ci_torch(), "transformers": CI_TRANSFORMERS}
    for key, want in tested.items():
        have = str(v[key]).split("+")[0]
        if ".".join(have.split(".")[:2]) != ".".join(want.split(".")[:2]):
            out.append(f"probe: WARNING {key} {have} here, CI tests {want}")
    return out


def ms_per_step(plan: Any, device: torch.device, seconds: float) -> dict[str, Any]:
    """The engine's step of `plan`'s first stage alone on `device`: median ms over timed steps
    after 3 warm-up steps, within about `seconds`; its peak memory and busy share (CUDA)."""
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    with tempfile.TemporaryDirectory(prefix="gpu-probe-") as tmp:
        torch.manual_seed(plan.seed)
        trainer = Trainer(plan, Path(tmp), data, RunReporter(lambda _e: None), device)
        try:
            trainer.enter_stage()
            cuda = device.type == "cuda"

            def sync() -> None:
                if cuda:
                    torch.cuda.synchronize(device)

            def step() -> None:
                trainer.train_step()

            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            for _ in range(3):
                trainer.train_step()
            sync()
            times: list[float] = []
            end = time.perf_counter() + seconds
            while len(times) < 5 or (time.perf_counter() < end and len(times) < 200):
                t = time.perf_counter()
                trainer.train_step()
                sync()
                times.append((time.perf_counter() - t) * 1e3)
            busy = busy_share(step, device)
            peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
        finally:
            trainer.prefetch.close()
    times.sort()
    return {"ms": times[len(times) // 2], "steps": len(times), "peak_bytes": peak, "busy": busy}


def startup_s() -> float:
    """Seconds for a fresh process to import the training path (what each gate run pays)."""
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import growcockpit.backend.loop.engine"],
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return time.perf_counter() - t


def ladder(scale: str, device: torch.device, rec: Records, seconds: float) -> None:
    """ms per step at 1, half and full depth of the gate's GPT-2 scale, each alone."""
    from common import TTL_SIZES, baseline_stages, plan_for

    size = TTL_SIZES[scale]["gpt2"]
    precision = "bf16" if device.type == "cuda" else "fp32"
    for depth in sorted({1, size.layers // 2, size.layers}):
        plan = plan_for(size, f"ladder-{depth}", baseline_stages(size))
        plan.stages[0].layers = depth
        plan.model.final_layers = depth
        plan.optim.precision = precision  # type: ignore[assignment]
        fig = ms_per_step(plan, device, seconds)
        tokens = size.batch * size.seq
        busy = fig["busy"]
        print(
            f"probe: gpt2 {scale} depth {depth}/{size.layers} alone: {fig['ms']:.2f} ms/step "
            f"({tokens / fig['ms'] * 1e3:,.0f} tokens/s, {fig['steps']} steps, {precision})"
            + (f", peak {fig['peak_bytes'] / 2**30:.2f} GiB" if fig["peak_bytes"] else "")
            + (f", busy {100 * busy:.0f}%" if busy is not None else ""),
            flush=True,
        )
        rec.write(
            {
                "kind": "ladder",
                "scale": scale,
                "depth": depth,
                "layers": size.layers,
                "tokens_per_step": tokens,
                "precision": precision,
                **fig,
            }
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--jsonl", type=Path, help="append each record here as it is measured")
    ap.add_argument("--scale", default="gpu", help="the gate's scale for the depth ladder")
    ap.add_argument("--device", default=None)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--ladder-s", type=float, default=3.0, help="timed seconds per depth")
    args = ap.parse_args(argv)
    import transformers

    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    device = prepare_device(
        torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    )
    if device.type == "cpu":
        torch.set_num_threads(1)
    rec = Records(args.jsonl)
    v = versions(device)
    rec.write(v)
    peak = (
        f"{v['datasheet_bf16_tflops']:g} TFLOP/s dense bf16 ({v['datasheet']})"
        if v["datasheet"]
        else "no datasheet peak"
    )
    print(
        f"probe: python {v['python']} torch {v['torch']} transformers {v['transformers']} "
        f"tokenizers {v['tokenizers']} cuda {v['cuda']} device {v['device']}: {peak}",
        flush=True,
    )
    for line in version_warnings(v):
        print(line, flush=True)
    # on the CPU the device's fp32 step is the reference itself: bf16 alone is checked
    precisions = ("fp32", "bf16") if device.type == "cuda" else ("bf16",)
    for family in args.families.split(","):
        try:
            checks = check_family(family, device, precisions)
        except Exception as exc:  # the loan stops here: one line, the traceback after it
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
            print(
                f"probe: STOP {family} on {device.type}: {type(exc).__name__} at {where}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}",
                flush=True,
            )
            traceback.print_exc()
            rec.write(
                {"kind": "stop", "family": family, "error": f"{type(exc).__name__} at {where}"}
            )
            return 4
        for check in checks:
            print(check.line(), flush=True)
            rec.write(check.as_json())
        bad = [c for c in checks if not c.ok]
        if bad:
            print(
                f"probe: STOP {family} {bad[0].precision} on {device.type}: the step differs "
                f"from the CPU's at {bad[0].operator}",
                flush=True,
            )
            rec.write({"kind": "stop", "family": family, "error": bad[0].operator})
            return 4
    s = startup_s()
    print(f"probe: one training process imports in {s:.1f} s", flush=True)
    rec.write({"kind": "startup", "seconds": s})
    ladder(args.scale, device, rec, args.ladder_s)
    print("probe: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
