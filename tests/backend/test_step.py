"""The training step (backend/loop/step.py): a guarded update, one device read per reported step,
phase timing, and the device set-up every entry point shares."""

from __future__ import annotations

import math
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from repo_paths import REPO, TESTS

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.device import prepare_device
from growcockpit.backend.loop import step_window as step_mod
from growcockpit.backend.loop.engine import Trainer
from growcockpit.backend.loop.optim import build_optimizer
from growcockpit.backend.loop.sentinel import SpikeSentinel
from growcockpit.backend.loop.step import StepTimer
from growcockpit.plan import loads_plan
from growcockpit.protocol import EventLog, RunPaths, read_all
from growcockpit.protocol.events import Error, Paused, Step

TINY = (TESTS / "plans" / "tiny.toml").read_text()


def make_trainer(tmp_path: Path, text: str = TINY) -> Trainer:
    plan = loads_plan(text, "test.toml")
    paths = RunPaths(tmp_path)
    reporter = RunReporter(EventLog(paths.events).append)
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    trainer = Trainer(plan, tmp_path, data, reporter, torch.device("cpu"))
    trainer.enter_stage()
    return trainer


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def poison(trainer: Trainer, where: str) -> None:
    """Make the next step's loss (or only its gradient) non-finite."""
    module = trainer.train_module
    original = module.forward

    def forward(*args: Any) -> torch.Tensor:
        loss: torch.Tensor = original(*args)
        if where == "loss":
            return loss * math.nan
        loss.register_hook(lambda g: g * math.inf)  # finite loss, infinite gradient
        return loss

    module.forward = forward  # type: ignore[method-assign]


@pytest.mark.usefixtures("gc_cache")
@pytest.mark.parametrize(
    ("fused", "where"), [(False, "loss"), (True, "loss"), (False, "grad"), ("lamb", "grad")]
)
def test_non_finite_step_skips_the_update_then_pauses(
    tmp_path: Path, fused: bool | str, where: str
) -> None:
    text = TINY.replace("[optim]\n", '[optim]\nname = "lamb"\n') if fused == "lamb" else TINY
    trainer = make_trainer(tmp_path, text)
    if isinstance(fused, bool):  # fused: device-side skip (the engine's); not: a host check
        trainer.optimizer = build_optimizer(trainer.model, trainer.plan.optim, 1e-3, fused=fused)
    trainer.train_step()  # one good step: optimizer state exists
    before = weights(trainer)
    poison(trainer, where)
    outcome = trainer.train_step()
    assert outcome is not None and outcome.skipped == 1
    trainer.after_step(outcome)
    after = weights(trainer)
    assert all(torch.equal(before[k], after[k]) for k in before), "weights changed"
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())
    assert trainer.paused
    events = read_all(tmp_path / "events.jsonl")
    error = next(e for e in events if isinstance(e, Error))
    assert "update skipped" in error.message and "step 2" in error.message
    assert ("nan" in error.message) == (where == "loss")
    assert any(isinstance(e, Paused) and e.reason == "non-finite loss" for e in events)


@pytest.mark.usefixtures("gc_cache")
@pytest.mark.parametrize("sentinel", [False, True])
def test_one_device_read_per_reported_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sentinel: bool
) -> None:
    text = re.sub(r"^eval_every_steps = 10$", "log_every_steps = 4", TINY, flags=re.M)
    text = text.replace("every_steps = 2\n", "every_steps = 0\ntiming_every_steps = 0\n", 1)
    trainer = make_trainer(tmp_path, text)
    trainer.optimizer = build_optimizer(trainer.model, trainer.plan.optim, 1e-3, fused=True)
    if sentinel:  # armed on both signals (windows full, far above: nothing spikes)
        armed = SpikeSentinel(2, 8.0, 8.0, torch.device("cpu"))
        for window in (armed.loss, armed.grad):
            window.values.fill_(1000.0)
            window.count = 2
        trainer.steps.sentinel = armed
    reads: list[int] = []
    real_to_host = step_mod.to_host
    monkeypatch.setattr(step_mod, "to_host", lambda v: reads.append(1) or real_to_host(v))
    # any other device→host read (item, float, bool, tolist) during the step is a sync on CUDA
    other: list[str] = []
    with monkeypatch.context() as m:
        for name in ("item", "tolist", "__float__", "__bool__", "__int__"):
            real = getattr(torch.Tensor, name)

            def spy(self: torch.Tensor, *a: Any, _n: str = name, _r: Any = real) -> Any:
                # batches are built from host tensors (prefetch thread or data.py): not a sync
                caller = sys._getframe(1).f_code.co_filename
                if threading.current_thread() is threading.main_thread() and not caller.endswith(
                    "backend/data/blocks.py"
                ):
                    other.append(_n)
                return _r(self, *a)

            m.setattr(torch.Tensor, name, spy)
        outcomes = [trainer.train_step() for _ in range(3)]
    assert outcomes == [None, None, None]
    assert reads == [] and other == [], f"host reads on unreported steps: {other}"
    outcome = trainer.train_step()
    assert outcome is not None and math.isfinite(outcome.loss) and outcome.skipped == 0
    assert reads == [1]
    steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
    assert [s.step for s in steps] == [4]
    assert steps[0].tokens == 4 * 8 * 64 and steps[0].fwd_ms > 0 and steps[0].opt_ms > 0


def test_step_timer_uses_cuda_events_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(100))

    class FakeEvent:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            self.t = -1.0

        def record(self) -> None:
            self.t = float(next(clock))

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: FakeEvent) -> float:
            return end.t - self.t

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    timer = StepTimer(torch.device("cuda", 0))
    timer.start(enabled=True)
    for _ in range(2):
        with timer.phase("fwd"):
            pass
        with timer.phase("bwd"):
            pass
    with timer.phase("opt"):
        pass
    assert timer.read() == {"fwd": 2.0, "bwd": 2.0, "opt": 1.0}
    timer.start(enabled=False)
    with timer.phase("fwd"):
        pass
    assert timer.read() == {}


def test_prepare_device_sets_the_current_gpu_and_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "set_device", calls.append)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (9, 0))
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert prepare_device(torch.device("cuda:1")) == torch.device("cuda", 1)
    assert calls == [torch.device("cuda", 1)]
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert prepare_device(torch.device("cpu")) == torch.device("cpu") and len(calls) == 1


class _Stop(Exception):
    pass


@pytest.mark.usefixtures("gc_cache")
def test_every_entry_point_makes_the_requested_gpu_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """backend (run.py), calibration and bench/gpu/gpu_check.py all call set_device for cuda:N."""
    import importlib.util

    from growcockpit.backend import calibrate
    from growcockpit.backend import run as run_mod

    seen: list[torch.device] = []

    def on_cpu(device: torch.device) -> torch.device:
        seen.append(device)
        return torch.device("cpu")

    monkeypatch.setattr(run_mod, "prepare_device", on_cpu)
    text = re.sub(r"^steps = 20$", "steps = 1", TINY, flags=re.M)
    plan = loads_plan(text, "test.toml")
    assert run_mod.run_training(plan, text, tmp_path / "run", device="cuda:1") == 0
    assert seen == [torch.device("cuda", 1)]

    def stop(device: torch.device) -> torch.device:
        seen.append(device)
        raise _Stop

    monkeypatch.setattr(calibrate, "prepare_device", stop)
    with pytest.raises(_Stop):
        calibrate.calibrate_plan(plan, torch.device("cuda:1"))
    assert seen[-1] == torch.device("cuda", 1)

    set_calls: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "set_device", set_calls.append)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (7, 0))
    path = REPO / "bench" / "gpu" / "gpu_check.py"
    spec = importlib.util.spec_from_file_location("gpu_check_under_test", path)
    assert spec is not None and spec.loader is not None
    gpu_check = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, gpu_check)
    spec.loader.exec_module(gpu_check)
    assert gpu_check.pick_device("cuda:1") == torch.device("cuda", 1)
    assert set_calls == [torch.device("cuda", 1)]


def test_compile_flag_reaches_the_plan_and_the_workers() -> None:
    from growcockpit.cli import build_parser
    from growcockpit.cli.launch import device_args

    args = build_parser().parse_args(["train", "plan.toml", "--compile", "--device", "cuda:1"])
    assert args.compile and device_args(args) == ["--device", "cuda:1", "--compile"]
    assert loads_plan(TINY.replace("[optim]\n", "[optim]\ncompile = true\n"), "t").optim.compile


def test_auto_precision_is_bf16_only_where_it_is_native(monkeypatch: pytest.MonkeyPatch) -> None:
    from growcockpit.backend.loop.step import resolve_precision

    capability = {"cap": (9, 0)}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: capability["cap"])
    assert resolve_precision("auto", torch.device("cuda", 0)) == "bf16"  # Hopper
    capability["cap"] = (7, 5)  # Turing: bf16 only emulated
    assert resolve_precision("auto", torch.device("cuda", 0)) == "fp32"
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("fp16", torch.device("cuda", 0)) == "fp16"


@pytest.mark.usefixtures("gc_cache")
def test_unreported_steps_are_reported_when_the_stage_ends_early(tmp_path: Path) -> None:
    text = re.sub(r"^eval_every_steps = 10$", "log_every_steps = 4", TINY, flags=re.M)
    trainer = make_trainer(tmp_path, text)
    assert [trainer.train_step() for _ in range(6)][3] is not None
    trainer.stop()  # as a stop command would, between steps
    assert trainer.run() == "stopped"
    steps = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, Step)]
    assert [s.step for s in steps] == [4, 6] and steps[1].tokens == 6 * 8 * 64
    assert trainer.last_loss == steps[1].loss
