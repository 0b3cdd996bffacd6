"""Home's run table with hundreds of runs: what reading the catalog costs (cold, and warm
with each run's plan keys cached), what a sort or filter costs on the event loop, and
how late the event loop runs while Home refreshes itself (the catalog is read in a
worker thread, so the loop should stay far below one read's time).

    .venv/bin/python bench/home_runs.py                  # 30 and 300 runs
    .venv/bin/python bench/home_runs.py --runs 30,1000 --json out.json

Headless (Textual's test driver), no torch. Every number comes from this one run, so the
ratios compare like with like on whatever load the machine has.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from growcockpit.protocol import RunPaths, RunStatus, write_status  # noqa: E402
from growcockpit.protocol.run_notes import RunNotes, write_notes  # noqa: E402
from growcockpit.session.catalog import list_runs  # noqa: E402
from growcockpit.session.home_runs import HomeRuns  # noqa: E402
from growcockpit.session.run_columns import SortSpec, parse_filter  # noqa: E402
from growcockpit.ui import GrowCockpitApp  # noqa: E402
from growcockpit.ui.screens import HomeScreen, home  # noqa: E402
from growcockpit.ui.widgets.runs_table import RunsTable  # noqa: E402

PLAN = """\
name = "run-{i}"
[model]
family = "{family}"
hidden_size = {hidden}
num_heads = 4
final_layers = 4
[optim]
lr = {lr}
batch_size = 16
[budget]
tokens = {tokens}
[[stages]]
name = "shallow"
layers = 2
steps = 100
[[stages]]
name = "deep"
layers = 4
steps = 100
"""
COLUMNS = ("model.family", "model.hidden_size", "optim.lr", "stages", "budget.tokens", "#base")


def make_runs(root: Path, n: int) -> None:
    for i in range(n):
        run = root / f"run-{i:04d}"
        run.mkdir(parents=True)
        family = ("bert", "llama", "gpt2")[i % 3]
        (run / "plan.toml").write_text(
            PLAN.format(
                i=i,
                family=family,
                hidden=64 * (1 + i % 4),
                lr=1e-4 * (1 + i % 7),
                tokens=10**6 * (1 + i % 5),
            )
        )
        write_status(
            RunPaths(run).status,
            RunStatus(
                run_id=run.name,
                plan_name=f"run-{i}",
                state="completed",
                stage=1,
                stage_name="deep",
                num_stages=2,
                step=200,
                total_steps=200,
                loss=3.0 + (i % 13) / 10,
                pid=0,
                heartbeat=1e9 + i,
            ),
        )
        if i % 4 == 0:
            write_notes(run, RunNotes(f"note {i}", ("base",) if i % 8 == 0 else ("mslt",)))


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def phase(seconds: float, tick: Callable[[], object] | None = None) -> dict[str, float]:
    """The event loop's CPU (its thread's, so other processes' load does not count) and its
    lateness (a 20 Hz sleep) for `seconds`; `tick()` every 2 s when given."""
    lags: list[float] = []
    cpu0 = time.thread_time()
    end = time.perf_counter() + seconds
    next_tick = time.perf_counter()
    while time.perf_counter() < end:
        if tick is not None and time.perf_counter() >= next_tick:
            tick()
            next_tick += 2.0
        t = time.perf_counter()
        await asyncio.sleep(0.05)
        lags.append(time.perf_counter() - t - 0.05)
    return {"loop_cpu_s": time.thread_time() - cpu0, "lag_p99_s": p99(lags)}


def p99(values: list[float]) -> float:
    return sorted(values)[int(0.99 * (len(values) - 1))]


def bump_step(run: Path, step: int) -> None:
    """A live run's next step: one cell (its step) changes on the next refresh."""
    write_status(
        RunPaths(run).status,
        RunStatus(
            run_id=run.name,
            plan_name="live",
            state="running",
            stage=1,
            stage_name="deep",
            num_stages=2,
            step=step,
            total_steps=10_000,
            loss=3.0,
            pid=os.getpid(),
        ),
    )


async def on_loop(root: Path, seconds: float, settings: Path) -> dict[str, float]:
    """Home with every extra column shown, one run live: a sort and a filter redraw, and
    the event loop's CPU and lateness while nothing refreshes, while Home refreshes every
    2 s with one cell changed (patched in place), and while each refresh rebuilds the
    whole table (as any change did before)."""
    os.environ["XDG_CONFIG_HOME"] = str(settings)
    home.REFRESH_S = 3600.0  # refreshes come from the phases below, at known times
    live = sorted(root.iterdir())[0]
    bump_step(live, 1)
    app = GrowCockpitApp(runs_root=root, workdir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HomeScreen)
        while not screen.rows:  # past FIRST_READ_HERE runs the first read is a worker's
            await pilot.pause(0.05)
        screen.table_model.set_columns(COLUMNS)
        t = time.thread_time()
        screen.table_model.set_sort(SortSpec("optim.lr", True))
        screen.redraw_runs()
        sort_s = time.thread_time() - t
        t = time.thread_time()
        screen.table_model.only = parse_filter("#base")
        screen.redraw_runs()
        filter_s = time.thread_time() - t
        screen.table_model.only = parse_filter("")
        screen.redraw_runs()
        await pilot.pause(0.5)
        step = iter(range(2, 10_000))
        table = screen.query_one(RunsTable)

        def patched() -> None:
            bump_step(live, next(step))
            screen.action_refresh()

        def rebuilt() -> None:
            table._drawn = None  # forget what is drawn: the next view is drawn whole
            patched()

        quiet = await phase(seconds)
        patch = await phase(seconds, patched)
        full = await phase(seconds, rebuilt)
        await pilot.app.workers.wait_for_complete()
    return {
        "sort_redraw_cpu_s": sort_s,
        "filter_redraw_cpu_s": filter_s,
        "loop_cpu_quiet_s": quiet["loop_cpu_s"],
        "loop_cpu_patched_s": patch["loop_cpu_s"],
        "loop_cpu_rebuilt_s": full["loop_cpu_s"],
        "loop_cpu_patched_over_rebuilt": patch["loop_cpu_s"] / full["loop_cpu_s"],
        "lag_p99_quiet_s": quiet["lag_p99_s"],
        "lag_p99_patched_s": patch["lag_p99_s"],
        "lag_p99_rebuilt_s": full["lag_p99_s"],
    }


def measure(n: int, seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        make_runs(root, n)
        catalog_s = timed(lambda: list_runs(root), 3)
        cold_s = timed(lambda: HomeRuns(root, Path(tmp) / "s.json").read(), 3)
        model = HomeRuns(root, Path(tmp) / "s.json")
        model.read()
        warm_s = timed(model.read, 3)
        loop = asyncio.run(on_loop(root, seconds, Path(tmp) / "xdg"))
    return {
        "runs": n,
        "catalog_only_s": catalog_s,
        "read_cold_s": cold_s,
        "read_warm_s": warm_s,
        "warm_over_cold": warm_s / cold_s,
        "warm_over_catalog_only": warm_s / catalog_s,
        **loop,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="30,300", help="run counts, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0, help="each probe phase")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sizes = [int(n) for n in args.runs.split(",")]
    results = [measure(n, args.seconds) for n in sizes]
    for out in results:
        for k, v in out.items():
            print(f"{k:30s} {v:.4g}" if isinstance(v, float) else f"{k:30s} {v}")
        print()
    first, last = results[0], results[-1]
    ratios = {
        f"{k}_{last['runs']}_over_{first['runs']}": last[k] / max(first[k], 1e-9)
        for k in ("read_warm_s", "loop_cpu_patched_s", "loop_cpu_rebuilt_s", "sort_redraw_cpu_s")
    }
    for k, v in ratios.items():
        print(f"{k:44s} {v:.3g}")
    if args.json:
        args.json.write_text(json.dumps({"sizes": results, "ratios": ratios}, indent=2) + "\n")


if __name__ == "__main__":
    main()
