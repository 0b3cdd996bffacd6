"""Growth recipes through real tiny training runs: events, resume, weights.

Each run is a real `growcockpit train` / `resume` process, forked warm (run_fixtures.warm_growcockpit).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from repo_paths import TESTS
from run_fixtures import of_type, warm_growcockpit

from growcockpit.protocol import read_all
from growcockpit.protocol.events import Grow, RunStarted, StageStarted, Step

pytestmark = pytest.mark.slow


def tiny_plan(
    family: str,
    grow_stage: str,
    *,
    first: int = 10,
    second: int = 12,
    depth: tuple[int, int] = (2, 4),
) -> str:
    """A 2 → 4 layer plan of width 32; `grow_stage` holds the second stage's extra keys."""
    return f"""
name = "tiny-{family}-recipe"
seed = 0
[model]
family = "{family}"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 64
final_layers = {depth[1]}
[data]
tokenizer = "train:2000"
seq_len = 64
[optim]
lr = 1e-3
warmup_steps = 3
batch_size = 8
[metrics]
every_steps = 0
timing_every_steps = 0
system_every_s = 0
[checkpoint]
every_steps = 4
keep = 10
[[stages]]
name = "shallow"
layers = {depth[0]}
steps = {first}
[[stages]]
name = "grown"
layers = {depth[1]}
enter = "stack"
steps = {second}
{grow_stage}
"""


def train(tmp_path: Path, cache: Path, name: str, text: str) -> Path:
    plan = tmp_path / f"{name}.toml"
    plan.write_text(text)
    run_dir = tmp_path / name
    res = warm_growcockpit("train", str(plan), "--run-dir", str(run_dir), cache=cache)
    assert res.returncode == 0, res.stderr
    return run_dir


def resume_replays(tmp_path: Path, cache: Path, full: Path, from_step: int) -> None:
    """Resume a copy of `full` from checkpoint `from_step`: the same losses, bit for bit."""
    cut = tmp_path / f"{full.name}-cut"
    shutil.copytree(full, cut)
    for ck in (cut / "checkpoints").glob("step-*"):
        if int(ck.name[5:]) > from_step:
            shutil.rmtree(ck)
    res = warm_growcockpit("resume", str(cut), "--force", cache=cache)
    assert res.returncode == 0, res.stderr
    reference = {e.step: e.loss for e in of_type(read_all(full / "events.jsonl"), Step)}
    events = read_all(cut / "events.jsonl")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    resumed = of_type(events[restart:], Step)
    assert [e.step for e in resumed] == list(range(from_step + 1, max(reference) + 1))
    assert [e.loss for e in resumed] == [reference[e.step] for e in resumed]


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_ramp_keeps_the_function_at_growth_and_resumes_inside_the_ramp(
    tmp_path: Path, gc_cache: Path, family: str
) -> None:
    run = train(tmp_path, gc_cache, f"ramp-{family}", tiny_plan(family, "ramp_steps = 6"))
    events = read_all(run / "events.jsonl")
    (grow,) = of_type(events, Grow)
    assert grow.loss_before is not None and grow.loss_after is not None
    assert abs(grow.loss_after - grow.loss_before) <= 1e-5
    assert of_type(events, StageStarted)[1].layers == 4
    # step 12 is the grown stage's step 2 of a 6-step ramp
    resume_replays(tmp_path, gc_cache, run, 12)


def test_zero_init_gpt2_keeps_the_function_at_growth(tmp_path: Path, gc_cache: Path) -> None:
    text = tiny_plan("gpt2", 'init = "zero"\ntrain = "new"\nrewarmup_steps = 4').replace(
        "batch_size = 8", "batch_size = 8\noptimizer_reset = false"
    )
    run = train(tmp_path, gc_cache, "zero", text)
    (grow,) = of_type(read_all(run / "events.jsonl"), Grow)
    assert grow.loss_before is not None and grow.loss_after == grow.loss_before
    assert "init=zero" in grow.detail
    grown = [e.lr for e in of_type(read_all(run / "events.jsonl"), Step) if e.stage == 1]
    assert grown[:5] == pytest.approx([1e-3 * (t + 1) / 4 for t in range(4)] + [1e-3])


def test_middle_stack_trains_the_inserted_blocks_gated(tmp_path: Path, gc_cache: Path) -> None:
    keys = 'source = "middle"\ntrain = "new"\nramp_steps = 4'
    run = train(tmp_path, gc_cache, "middle", tiny_plan("gpt2", keys, depth=(3, 5)))
    events = read_all(run / "events.jsonl")
    (grow,) = of_type(events, Grow)
    assert grow.loss_before is not None and grow.loss_after == grow.loss_before
    assert "2←0, 3←1" in grow.detail
    assert of_type(events, StageStarted)[1].trainable_layers == [2, 3]


def test_layer_drop_trains_and_resumes_exactly(tmp_path: Path, gc_cache: Path) -> None:
    run = train(tmp_path, gc_cache, "drop", tiny_plan("gpt2", "layer_drop = 0.5", depth=(3, 5)))
    steps = of_type(read_all(run / "events.jsonl"), Step)
    assert len(steps) == 22 and all(s.loss == s.loss for s in steps)
    resume_replays(tmp_path, gc_cache, run, 16)


def test_ramp_on_decoalesce_keeps_the_small_models_function(tmp_path: Path, gc_cache: Path) -> None:
    vcycle = (TESTS / "plans" / "tiny-vcycle.toml").read_text()
    text = vcycle.replace('enter = "interpolate"', 'enter = "decoalesce"\nramp_steps = 5')
    text = text.replace('family = "bert"', 'family = "gpt2"')
    run = train(tmp_path, gc_cache, "vcycle-ramp", text)
    grow = of_type(read_all(run / "events.jsonl"), Grow)[-1]
    assert grow.operator == "decoalesce" and grow.to_layers == 4 and grow.to_width == 64
    assert grow.loss_before is not None and grow.loss_after is not None
    assert abs(grow.loss_after - grow.loss_before) <= 1e-5
