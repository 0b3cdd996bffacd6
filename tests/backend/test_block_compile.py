"""`[optim] compile = true` compiles each block's forward (backend/loop/block_compile.py).

These run real dynamo tracing with `compile_backend = "eager"` (the captured graph run
by eager kernels: inductor's code generation takes minutes on this CPU; the GPU check
runs inductor). They prove what per-block compiling is for: training is unchanged, the
per-layer timing still reports, a grown stage and layer drop's changing skip pattern
compile nothing new, and no block keeps a compiled callable once its call returns.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import torch
import torch._dynamo
from repo_paths import TESTS
from test_step import make_trainer

from growcockpit.grow import get_layers
from growcockpit.plan import loads_plan
from growcockpit.plan.errors import PlanError
from growcockpit.protocol import read_all
from growcockpit.protocol.events import LayerStats, StageStarted, Step

TINY = (TESTS / "plans" / "tiny.toml").read_text()
TINY_LLAMA = (TESTS / "plans" / "tiny-llama.toml").read_text()


def _graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


@pytest.fixture
def fresh_dynamo() -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


def _plan(text: str, compiled: bool, steps: int = 4, extra_stage_keys: str = "") -> str:
    text = re.sub(r"^steps = \d+$", f"steps = {steps}", text, flags=re.M)
    text = re.sub(r"^eval_every_steps = \d+$", "eval_every_steps = 0", text, flags=re.M)
    text = re.sub(r"^every_steps = \d+$", "every_steps = 1", text, count=1, flags=re.M)
    text = text.replace("[metrics]\n", "[metrics]\ntiming_every_steps = 1\n")
    if compiled:
        text = text.replace("[optim]\n", '[optim]\ncompile = true\ncompile_backend = "eager"\n')
    return text + extra_stage_keys


def _losses(run_dir: Path) -> list[float]:
    return [e.loss for e in read_all(run_dir / "events.jsonl") if isinstance(e, Step)]


@pytest.mark.usefixtures("gc_cache", "fresh_dynamo")
@pytest.mark.parametrize(
    "text",
    [TINY, pytest.param(TINY_LLAMA, marks=pytest.mark.slow)],  # llama compiles for ~16 s
    ids=["bert", "llama"],
)
def test_compiled_blocks_train_as_eager_and_still_time_every_layer(
    tmp_path: Path, text: str
) -> None:
    finals = []
    for compiled in (False, True):
        run_dir = tmp_path / str(compiled)
        run_dir.mkdir()
        trainer = make_trainer(run_dir, _plan(text, compiled))
        assert trainer.run() == "completed"
        finals.append((_losses(run_dir), trainer.model.state_dict()))
        events = read_all(run_dir / "events.jsonl")
        started = [e for e in events if isinstance(e, StageStarted)]
        stats = [e for e in events if isinstance(e, LayerStats)]
        assert [s.compile_s is not None for s in started] == [compiled, compiled]
        last = stats[-1].layers
        assert all(layer.fwd_ms is not None and layer.fwd_ms > 0 for layer in last), last
        trained = [layer for layer in last if layer.trainable]
        assert trained and all(layer.bwd_ms is not None for layer in trained)
        assert all("forward" not in vars(block) for block in get_layers(trainer.model))
    (eager_losses, eager_w), (comp_losses, comp_w) = finals
    assert len(comp_losses) == 8
    assert comp_losses == pytest.approx(eager_losses, rel=1e-5, abs=1e-6)
    for key, value in eager_w.items():
        torch.testing.assert_close(comp_w[key], value, rtol=1e-4, atol=1e-5)
    assert _graphs() > 0, "nothing was compiled"


@pytest.mark.usefixtures("gc_cache", "fresh_dynamo")
def test_a_grown_stage_reuses_the_graphs_of_the_blocks_it_copies(tmp_path: Path) -> None:
    """Stage 2 stacks copies and trains every layer: the same guards as stage 1, so the
    stage change compiles no graph (a whole-model compile would recompile here)."""
    text = _plan(TINY, True).replace('train = "new"', 'train = "all"')
    trainer = make_trainer(tmp_path, text)
    for _ in range(4):
        trainer.train_step()
    after_first = _graphs()
    assert after_first > 0
    assert trainer.run() == "completed"
    assert len(get_layers(trainer.model)) == 4
    assert _graphs() == after_first


@pytest.mark.usefixtures("gc_cache", "fresh_dynamo")
def test_layer_drop_changes_its_pattern_every_step_without_a_recompile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from growcockpit.backend.loop import recipes

    patterns: list[frozenset[int]] = []

    def recorded(*args: object) -> frozenset[int]:
        skip = original(*args)  # type: ignore[arg-type]
        patterns.append(skip)
        return skip

    original = recipes.skipped_blocks
    monkeypatch.setattr(recipes, "skipped_blocks", recorded)
    text = _plan(TINY, True, steps=12).replace('train = "new"', 'train = "all"\nlayer_drop = 0.5')
    trainer = make_trainer(tmp_path, text)
    for _ in range(12):
        trainer.train_step()
    after_first = _graphs()
    assert trainer.run() == "completed"
    assert len(set(patterns)) >= 3, patterns
    assert _graphs() == after_first


def test_compile_backend_is_checked_and_needs_compile() -> None:
    with pytest.raises(PlanError, match=r"optim\.compile_backend"):
        loads_plan(_plan(TINY, True).replace('"eager"', '"tvm"'), "t.toml")
    with pytest.raises(PlanError, match=r"optim\.compile_backend.*compile = true"):
        loads_plan(TINY.replace("[optim]\n", '[optim]\ncompile_backend = "eager"\n'), "t.toml")
    assert loads_plan(_plan(TINY, True), "t.toml").optim.compile_backend == "eager"


@pytest.mark.usefixtures("gc_cache", "fresh_dynamo")
def test_a_copied_block_runs_its_own_weights(tmp_path: Path) -> None:
    """stack deep-copies blocks: a copy made after compiled steps must compute with its own
    weights (a compiled forward left on the source would run the source's)."""
    trainer = make_trainer(tmp_path, _plan(TINY, True))
    trainer.train_step()
    block = get_layers(trainer.model)[0]
    twin = copy.deepcopy(block)
    with torch.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    h = torch.randn(2, 8, 32)
    assert not torch.allclose(twin(h)[0], block(h)[0])
