"""A 2-rank gloo `torchrun` loop under `growcockpit.track` on every rank: rank 0 writes the
run, and one command (pause, set_lr, stop) holds, scales and ends both ranks together."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_fixtures import env, of_type, wait_events
from test_track_loop import ctl

from growcockpit.protocol import read_all
from growcockpit.protocol.events import RanksMemory, RunFinished, RunStarted, Step

pytestmark = pytest.mark.slow

LOOP = """
import sys, time, torch, torch.distributed as dist, growcockpit
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
cockpit = growcockpit.track(sys.argv[1], model=model, optimizer=opt, layers=list(model))
used = {}
opt.register_step_pre_hook(lambda o, *_: used.__setitem__("lr", o.param_groups[0]["lr"]))
out = open(f"{sys.argv[2]}/rank{rank}.log", "a", buffering=1)
it = 0
while True:
    for g in opt.param_groups:
        g["lr"] = 0.1  # the loop's own LR, every iteration
    loss = ddp(torch.randn(4, 8, requires_grad=True)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    out.write(f"{it} {used['lr']}\\n")
    if not cockpit.step(loss=loss, tokens=4, step=it):
        break
    it += 1
    time.sleep(0.02)
cockpit.close()
out.write("done\\n")
dist.barrier()  # leave together: gloo torn down under a busy peer can abort
dist.destroy_process_group()
"""


def _lines(folder: Path, rank: int) -> list[str]:
    path = folder / f"rank{rank}.log"
    return path.read_text().splitlines() if path.exists() else []


def test_one_command_pauses_scales_and_stops_every_rank(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    run = tmp_path / "runs" / "ddp"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(script),
            str(run),
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**env(tmp_path / "cache"), "OMP_NUM_THREADS": "1"},
    )
    try:
        wait_events(run, lambda evs: len(of_type(evs, Step)) >= 3, timeout=120)
        assert ctl(run, "pause").returncode == 0
        time.sleep(0.3)
        held = [_lines(tmp_path, r) for r in (0, 1)]
        time.sleep(1.0)
        assert [_lines(tmp_path, r) for r in (0, 1)] == held, "a rank stepped while paused"
        assert held[0][-1].split()[0] == held[1][-1].split()[0], "the ranks hold at one step"
        at = int(held[0][-1].split()[0])

        assert ctl(run, "set_lr", "0.5").returncode == 0
        assert ctl(run, "resume").returncode == 0
        wait_events(run, lambda evs: of_type(evs, Step)[-1].step > at + 3, timeout=60)
        assert ctl(run, "stop").returncode == 0
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    for rank in (0, 1):
        lines = _lines(tmp_path, rank)
        assert lines[-1] == "done"
        lrs = {int(i): float(lr) for i, lr in (line.split() for line in lines[:-1])}
        assert all(lr == pytest.approx(0.1) for i, lr in lrs.items() if i <= at)
        assert all(lr == pytest.approx(0.05) for i, lr in lrs.items() if i > at)
    assert _lines(tmp_path, 0) == _lines(tmp_path, 1)  # the same steps at the same LRs
    events = read_all(run / "events.jsonl")
    started = of_type(events, RunStarted)
    assert len(started) == 1 and started[0].world_size == 2  # rank 1 wrote nothing
    steps = of_type(events, Step)
    assert steps[-1].tokens == 8 * (steps[-1].step + 1)  # both ranks' tokens
    assert of_type(events, RunFinished)[-1].status == "stopped"
    assert sorted(os.listdir(run / "checkpoints")) == [f"step-{steps[-1].step}"]
    memory = of_type(events, RanksMemory)  # every 5th step, as the engine's
    assert memory and all(m.strategy == "ddp" and m.world_size == 2 for m in memory)
    assert all([r.rank for r in m.ranks] == [0, 1] for m in memory)
    assert all(r.params == 4 * (8 * 8 + 8 + 8 + 1) and r.rss > 0 for r in memory[0].ranks)
