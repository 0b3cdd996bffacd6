"""Cockpit benchmarks: attach time for a 100k-event log (cold: folding the whole log; warm:
re-attaching, from the attach index the first cockpit left; kept: a run as `growcockpit
train` leaves it, its index kept by the trainer up to the last 3000 events), frame time under a 500
events/s stream, and the cockpit's RSS. Headless (Textual's test driver), no GPU, no torch.

    .venv/bin/python bench/ui.py                 # defaults: 100k events, 10 s at 500 ev/s
    .venv/bin/python bench/ui.py --json out.json --stream-seconds 5

"Frame time" here is the time the event loop spends in one dashboard flush
(text at 4 Hz, plots at 2 Hz) plus the loop's lag measured by a 20 Hz probe
timer: what a person feels as responsiveness while events pour in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the recorded/generated event logs of the UI tests
sys.path.insert(0, str(ROOT))

from ui_fixtures import write_long_log  # noqa: E402

from growcockpit.protocol import EventLog, LayerStat, LayerStats, RunPaths, Step  # noqa: E402
from growcockpit.session.attach_index import INDEX_NAME  # noqa: E402
from growcockpit.session.index_keeper import IndexKeeper  # noqa: E402
from growcockpit.ui import GrowCockpitApp  # noqa: E402
from growcockpit.ui.screens import DashboardScreen  # noqa: E402

KEPT_UNINDEXED = 3_000


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def cpu_s() -> float:
    """CPU seconds of this process, all threads: unlike wall time, barely moved by other load."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def attach(run_dir: Path, size: tuple[int, int]) -> dict[str, float]:
    app = GrowCockpitApp(run_dir=run_dir, theme="dark")
    t0 = time.perf_counter()
    c0 = cpu_s()
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        first = None
        while not screen.session.caught_up:
            if first is None and screen.session.events_read:
                first = time.perf_counter() - t0
            await pilot.pause(0.01)
        screen.flush_text()
        screen.flush_plot()
        await pilot.pause()
        total = time.perf_counter() - t0
        return {
            "attach_s": round(total, 3),
            "attach_cpu_s": round(cpu_s() - c0, 3),
            "first_events_s": round(first or total, 3),
            "events": screen.session.events_read,
            "rss_after_attach_mib": round(rss_mib(), 1),
        }


def writer(path: Path, rate: float, seconds: float, stop: threading.Event, layers: int = 24) -> int:
    """Append a realistic mix at `rate` events/s: steps, and per-layer stats every 10 steps."""
    n = 0
    step = 0
    start = time.perf_counter()
    with EventLog(path) as log:
        while not stop.is_set() and time.perf_counter() - start < seconds:
            target = int((time.perf_counter() - start) * rate)
            while n < target:
                step += 1
                log.append(
                    Step(
                        step=step,
                        stage=0,
                        loss=5 + math.sin(step / 50),
                        lr=1e-4,
                        tokens=step * 4096,
                        tokens_per_s=40_000.0,
                        step_ms=25.0,
                        fwd_ms=8.0,
                        bwd_ms=14.0,
                        opt_ms=2.0,
                        data_ms=1.0,
                    )
                )
                n += 1
                if step % 10 == 0:
                    log.append(
                        LayerStats(
                            step=step,
                            layers=[
                                LayerStat(id=i, trainable=True, grad_norm=0.1 + 0.01 * i)
                                for i in range(layers)
                            ],
                        )
                    )
                    n += 1
            time.sleep(0.005)
    return n


async def stream(
    run_dir: Path, rate: float, seconds: float, size: tuple[int, int]
) -> dict[str, float]:
    from growcockpit.protocol import RunStarted, StageStarted

    events = RunPaths(run_dir).events
    with EventLog(events) as log:
        log.append(
            RunStarted(
                run_id="bench",
                plan={"name": "bench", "stages": [{"name": "s", "layers": 24, "steps": 10**7}]},
            )
        )
        log.append(
            StageStarted(
                index=0, name="s", layers=24, trainable_layers=list(range(24)), steps=10**7
            )
        )
    app = GrowCockpitApp(run_dir=run_dir, theme="dark")
    text_ms: list[float] = []
    plot_ms: list[float] = []
    lag_ms: list[float] = []
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        orig_text, orig_plot = screen.flush_text, screen.flush_plot

        def timed_text() -> None:
            t = time.perf_counter()
            orig_text()
            text_ms.append((time.perf_counter() - t) * 1000)

        def timed_plot() -> None:
            t = time.perf_counter()
            orig_plot()
            plot_ms.append((time.perf_counter() - t) * 1000)

        screen.flush_text = timed_text  # type: ignore[method-assign]
        screen.flush_plot = timed_plot  # type: ignore[method-assign]
        # the timers hold the original bound methods: re-register with the timed ones
        for timer in list(screen._timers):
            timer.stop()
        screen.set_interval(0.25, timed_text)
        screen.set_interval(0.5, timed_plot)
        stop = threading.Event()
        result: dict[str, int] = {}
        th = threading.Thread(
            target=lambda: result.setdefault("n", writer(events, rate, seconds, stop))
        )
        th.start()
        probe_period = 0.05
        last = time.perf_counter()
        end = last + seconds
        while time.perf_counter() < end:
            await asyncio.sleep(probe_period)
            now = time.perf_counter()
            lag_ms.append(max(0.0, (now - last - probe_period) * 1000))
            last = now
        stop.set()
        th.join()
        await pilot.pause(0.6)
        shown_step = screen.session.state.step
    return {
        "stream_events": result.get("n", 0),
        "stream_rate_per_s": round(result.get("n", 0) / seconds, 1),
        "flush_text_ms_p50": round(statistics.median(text_ms), 2) if text_ms else float("nan"),
        "flush_text_ms_p95": round(pct(text_ms, 0.95), 2),
        "flush_plot_ms_p50": round(statistics.median(plot_ms), 2) if plot_ms else float("nan"),
        "flush_plot_ms_p95": round(pct(plot_ms, 0.95), 2),
        "flush_plot_ms_max": round(max(plot_ms), 2) if plot_ms else float("nan"),
        "loop_lag_ms_p50": round(statistics.median(lag_ms), 2),
        "loop_lag_ms_p95": round(pct(lag_ms, 0.95), 2),
        "last_step_shown": shown_step,
        "rss_after_stream_mib": round(rss_mib(), 1),
    }


def kept_run(log: Path, run_dir: Path, unindexed: int = KEPT_UNINDEXED) -> Path:
    """`log` as `growcockpit train` leaves it: its index kept by the trainer's keeper
    (session/index_keeper.py) up to `unindexed` events before the end (the keeper writes
    every 30 s: 3000 events of a run logging 100 events/s)."""
    lines = log.read_bytes().splitlines(keepends=True)
    events = RunPaths(run_dir).events
    events.parent.mkdir(parents=True)
    events.write_bytes(b"".join(lines[:-unindexed]))
    keeper = IndexKeeper(run_dir, save_s=0.0, poll_s=0.01)
    keeper.start()
    keeper.stop()
    assert keeper.failed is None and (run_dir / INDEX_NAME).exists(), keeper.failed
    with open(events, "ab") as fh:
        fh.write(b"".join(lines[-unindexed:]))
    return run_dir


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--rate", type=float, default=500.0)
    p.add_argument("--stream-seconds", type=float, default=10.0)
    p.add_argument("--width", type=int, default=160)
    p.add_argument("--height", type=int, default=48)
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gc-bench-xdg-"))
    size = (args.width, args.height)
    out: dict[str, object] = {"size": f"{size[0]}x{size[1]}", "rss_start_mib": round(rss_mib(), 1)}
    with tempfile.TemporaryDirectory(prefix="gc-bench-") as tmp:
        long_dir = Path(tmp) / "long"
        t = time.perf_counter()
        info = write_long_log(RunPaths(long_dir).events, n_events=args.events)
        out["log_mb"] = round(RunPaths(long_dir).events.stat().st_size / 1e6, 1)
        out["log_write_s"] = round(time.perf_counter() - t, 2)
        out.update(asyncio.run(attach(long_dir, size)))
        assert out["events"] == info["events"], out
        warm = asyncio.run(attach(long_dir, size))
        assert warm["events"] == info["events"], warm
        out["reattach_s"] = warm["attach_s"]
        out["reattach_cpu_s"] = warm["attach_cpu_s"]
        index = long_dir / INDEX_NAME
        out["attach_index_kib"] = round(index.stat().st_size / 1024) if index.exists() else 0
        kept = asyncio.run(attach(kept_run(RunPaths(long_dir).events, Path(tmp) / "kept"), size))
        assert kept["events"] == info["events"], kept
        out["attach_kept_s"] = kept["attach_s"]
        out["attach_kept_cpu_s"] = kept["attach_cpu_s"]
        stream_dir = Path(tmp) / "stream"
        stream_dir.mkdir()
        out.update(asyncio.run(stream(stream_dir, args.rate, args.stream_seconds, size)))
    for key, value in out.items():
        print(f"{key:>24}: {value}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
