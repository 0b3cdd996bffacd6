"""The stage editor's open (`e` on a live run's dashboard): widgets built and time to its first
frame, for a plan with N stages still to run. Headless (Textual's test driver), no torch.

The cost of opening the editor is Textual's, per widget (styles, layout, the first render), not
I/O: the widget count is the number that moves it, and it should not grow with the stages.

    .venv/bin/python bench/ui_editor.py                          # 8 remaining stages, 5 rounds
    .venv/bin/python bench/ui_editor.py --before /tmp/old        # another checkout, same rounds

`--before DIR` runs the same opens on the growcockpit package under DIR (e.g. `git archive
<commit> growcockpit themes | tar -x -C DIR`) in its own process, rounds interleaved with this
checkout's, and prints the ratios. Wall times on a shared box move with the load: read the
CPU seconds (this process's own) and the medians next to each other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# the remaining stages cycle through the operators the form shows options for
OPERATOR_STAGES = (
    'enter = "stack"\nsource = "top"\nlayers = 6',
    'enter = "continue"\nlayers = 6',
    'enter = "interpolate"\nlayers = 6',
    'enter = "continue"\nlayers = 6\nadvance = "plateau"\npatience = 20',
)


def plan_text(remaining: int) -> str:
    """A 6-layer BERT plan: one 2-layer stage (the one running), then `remaining` stages."""
    head = (
        'name = "editor-bench"\n\n[model]\nfamily = "bert"\nhidden_size = 128\nnum_heads = 4\n'
        "intermediate_size = 512\nmax_seq_len = 128\nfinal_layers = 6\n\n"
        '[optim]\nlr = 5e-4\nbatch_size = 16\n\n[[stages]]\nname = "shallow"\nlayers = 2\n'
        'enter = "init"\nsteps = 100\n'
    )
    rest = "".join(
        f'\n[[stages]]\nname = "s{i + 1}"\n{OPERATOR_STAGES[i % len(OPERATOR_STAGES)]}\n'
        "steps = 100\n"
        for i in range(remaining)
    )
    return head + rest


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def open_editor(work: Path, remaining: int) -> dict[str, float]:
    """Dashboard on a live recorded run (stage 1 running), then `e`: seconds from the key to
    the editor's first frame with the form loaded, and the widgets on the editor's screen."""
    from ui_fixtures import settle, write_recorded_run

    from growcockpit.protocol import RunPaths
    from growcockpit.ui import GrowCockpitApp
    from growcockpit.ui.screens.designer import DesignerScreen
    from growcockpit.ui.widgets.plan_form import StageForm

    run_dir = work / f"run-{remaining}"
    shutil.rmtree(run_dir, ignore_errors=True)
    write_recorded_run(run_dir, finished=False, upto_step=10)
    RunPaths(run_dir).plan.write_text(plan_text(remaining))
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        t0, c0 = time.perf_counter(), cpu_s()
        await pilot.press("e")
        while True:
            screen = app.screen
            if isinstance(screen, DesignerScreen) and screen.is_mounted:
                forms = screen.query(StageForm)
                if forms and forms.first().index == screen.selected == 1:
                    break
            await pilot.pause(0.002)
        await pilot.pause()  # its first frame
        wall, cpu = time.perf_counter() - t0, cpu_s() - c0
        widgets = len(list(screen.walk_children(with_self=True)))
        form = len(list(screen.query_one(StageForm).walk_children(with_self=True)))
    return {"wall_s": wall, "cpu_s": cpu, "widgets": widgets, "form_widgets": form}


def child(args: argparse.Namespace) -> None:
    """One checkout's opens, as JSON lines on stdout (run in its own process)."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(args.checkout or ROOT))
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gc-bench-xdg-"))
    with tempfile.TemporaryDirectory(prefix="gc-editor-bench-") as tmp:
        for remaining in args.remaining:
            out = asyncio.run(open_editor(Path(tmp), remaining))
            print(json.dumps({"remaining": remaining, **out}), flush=True)


def run_child(checkout: Path | None, remaining: list[int]) -> list[dict[str, Any]]:
    cmd = [sys.executable, __file__, "--child", "--remaining", *map(str, remaining)]
    if checkout is not None:
        cmd += ["--checkout", str(checkout)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(
            f"bench/ui_editor.py: {checkout or 'this checkout'} failed:\n{done.stderr[-2000:]}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--remaining", type=int, nargs="+", default=[8], help="stages still to run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", type=Path, help="another checkout's root, timed in the same rounds")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--checkout", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if args.before is not None and not (args.before / "growcockpit").is_dir():
        sys.exit(f"--before {args.before}: no growcockpit package there; give a checkout's root")
    sides: dict[str, Path | None] = {"after": None}
    if args.before is not None:
        sides = {"before": args.before.resolve(), "after": None}
    rows: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in range(args.rounds):  # interleaved: both sides see the same load
        for side, checkout in sides.items():
            for row in run_child(checkout, args.remaining):
                rows.setdefault((side, row["remaining"]), []).append(row)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    summary: dict[str, Any] = {}
    print(
        f"{'checkout':<8} {'remaining':>9} {'widgets':>8} {'form':>5} "
        f"{'wall med s':>10} {'wall min s':>10} {'cpu med s':>9}"
    )
    for (side, remaining), got in sorted(rows.items()):
        med = statistics.median(g["wall_s"] for g in got)
        s = {
            "widgets": got[0]["widgets"],
            "form_widgets": got[0]["form_widgets"],
            "wall_median_s": med,
            "wall_min_s": min(g["wall_s"] for g in got),
            "cpu_median_s": statistics.median(g["cpu_s"] for g in got),
        }
        summary[f"{side}/{remaining}"] = s
        print(
            f"{side:<8} {remaining:>9} {s['widgets']:>8} {s['form_widgets']:>5} "
            f"{med:>10.3f} {s['wall_min_s']:>10.3f} {s['cpu_median_s']:>9.3f}"
        )
    if args.before is not None:
        for remaining in args.remaining:
            b, a = summary[f"before/{remaining}"], summary[f"after/{remaining}"]
            print(
                f"remaining={remaining}: widgets after/before = {a['widgets']}/{b['widgets']} "
                f"= {a['widgets'] / b['widgets']:.2f}; open time after/before (median wall) = "
                f"{a['wall_median_s'] / b['wall_median_s']:.2f}, (median cpu) = "
                f"{a['cpu_median_s'] / b['cpu_median_s']:.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
