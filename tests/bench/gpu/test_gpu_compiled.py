"""bench/gpu/gpu_check.py's compiled pass: every stage of both families compiled (real dynamo
tracing, the eager backend: seconds on a CPU) next to its eager step, the compile time apart
from the step times, and the budget rule that leaves rows "not compiled" rather than out."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import pytest
import torch
from gpu_check_fixtures import run_tiny_gpu_check
from repo_paths import REPO
from torch import nn

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from gpu_compiled import (  # noqa: E402
    FIRST_COMPILE_S,
    CompileMode,
    compile_mode,
    compiled_columns,
    compiled_pass,
    compiled_summary,
    eager_deadline,
    print_compiled,
)
from gpu_configs import RESERVE_S, Config  # noqa: E402

from growcockpit.backend.calibrate import Clock  # noqa: E402
from growcockpit.backend.loop.block_compile import BlockCompiler  # noqa: E402
from growcockpit.backend.loop.forward import StagedForward  # noqa: E402

BERT = ["baseline/1 full-12", "mslt/1 shallow-3", "mslt/2 grow-6", "mslt/3 grow-9"]
BERT += ["mslt/4 grow-12", "mslt/5 all-layers"]
LLAMA = ["llama-base/1 full-10", "llama/1 base-10", "llama/2 middle-20", "llama/3 middle-30"]
LLAMA += ["llama/4 all-layers"]
NUMERIC = ["compiled_step_ms", "paired_eager_step_ms", "compiled_over_eager"]
NUMERIC += ["compiled_over_bound", "paired_eager_over_bound", "compiled_speedup"]
NUMERIC += ["compiled_tokens_per_s", "compile_s"]


@pytest.mark.slow
def test_tiny_compiled_pass_times_every_stage_of_both_families(
    gc_cache: Path, tmp_path: Path
) -> None:
    args = ["--compile", "--compile-backend", "eager", "--steps", "2", "--batch-size", "4"]
    proc, out_json = run_tiny_gpu_check(gc_cache, tmp_path, args, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "not compiled" not in out, out
    lines = proc.stdout.splitlines()
    # each family's compiled table: a numeric row per stage, eager ms first, then compiled
    for family, labels in (("bert", BERT), ("llama", LLAMA)):
        start = next(i for i, line in enumerate(lines) if line.startswith("Compiled (each block"))
        end = start + 4 + len(labels)
        for label, row in zip(labels, lines[start + 4 : end], strict=True):
            assert row.startswith(label + " "), (family, row)
            cells = row[len(label) :].split()
            assert len(cells) == 9, row
            assert all(re.fullmatch(r"\d+(\.\d+)?x?", c) for c in cells), row
        assert re.match(r"compile: \d+\.\d s of warm-ups", lines[end]), lines[end]
        lines = lines[end:]  # the next family's table
    last = proc.stdout.strip().splitlines()[-1]
    figure = r"compiled_baseline=\d+tok/s compiled_over_eager=\d+\.\d\dx compile_s=\d+\.\d"
    assert re.search(rf"roofline_ratio=\S+ {figure} llama: ", last), last
    assert re.search(rf"llama: .*roofline_ratio=\S+ {figure} peak=", last), last

    result = json.loads(out_json.read_text())
    assert result["compile"]["wanted"] and result["compile"]["backend"] == "eager"
    for section, labels in ((result, BERT), (result["llama"], LLAMA)):
        rows = section["rows"]
        assert [r["config"] for r in rows] == labels
        for r in rows:
            assert r["compile_status"] == "timed" and r["compiled_timed_steps"] == 2, r
            for key in NUMERIC:
                assert isinstance(r[key], float) and math.isfinite(r[key]) and r[key] > 0, key
            assert r["compiled_over_eager"] == pytest.approx(
                r["paired_eager_step_ms"] / r["compiled_step_ms"]
            )
            assert r["compiled_over_bound"] == pytest.approx(r["compiled_step_ms"] / r["bound_ms"])
        # the one compiler serves every stage: the baseline compiles the block's graph, the
        # first grown stage (same guards: all trained, train mode) compiles none
        assert rows[0]["compile_graphs"] >= 1 and rows[1]["compile_graphs"] == 0
        assert rows[0]["compiled_speedup"] == 1.0
        compiled = section["compiled"]
        assert compiled["compile_s"] == pytest.approx(sum(r["compile_s"] for r in rows))
        assert compiled["steps_per_config"] == 2 and compiled["skipped"] is None


def _config(label: str, step_ms: float) -> Config:
    model = nn.Linear(2, 2)
    params = list(model.parameters())
    return Config(
        label=label,
        plan="x",
        stage_index=0,
        name=label,
        steps_in_plan=1,
        depth=1,
        trainable=[0],
        embeddings_trainable=True,
        model=model,
        forward=StagedForward(0, True),
        optimizer=torch.optim.SGD(params, lr=0.1),
        params=params,
        times_ms=[step_ms, step_ms],
    )


def _rows(configs: list[Config]) -> list[dict[str, object]]:
    rows = [
        {"config": c.label, "step_ms": 10.0, "bound_ms": 2.0, "flops_per_step": 1e9}
        for c in configs
    ]
    for row in rows:
        row.update(measured_over_bound=5.0, model_speedup=1.0)
    compiled_columns(rows, configs, tokens=256)
    return rows


@pytest.mark.parametrize("forced", [False, True])
def test_rows_the_budget_leaves_out_say_so(
    forced: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """No time left: no configuration is compiled (nothing is run), and every row stays in the
    table saying why; the summary says the baseline was not compiled."""
    configs = [_config("base/1", 10.0), _config("grown/1", 5.0)]
    mode = CompileMode(True, forced, "eager", "test")
    cpu = torch.device("cpu")
    compiler = BlockCompiler("eager")
    deadline = time.monotonic() + 5.0  # within the report's margin: no time for anything
    run = compiled_pass(
        configs, [], lambda: None, 1.0, Clock(cpu), cpu, (4, 1, 2), compiler, mode, deadline
    )
    assert [c.compile_status for c in configs] == ["not compiled: budget"] * 2
    assert all(c.compile_s is None and not c.compiled_ms for c in configs)
    assert bool(run.skipped) is not forced  # the up-front estimate: the default rule only
    rows = _rows(configs)
    assert all(r["compiled_step_ms"] is None and r["compiled_over_eager"] is None for r in rows)
    print_compiled(run, rows)
    table = capsys.readouterr().out
    for c in configs:
        assert re.search(rf"^{re.escape(c.label)} +10\.00 not compiled: budget$", table, re.M)
    assert compiled_summary(run, rows) == " compiled=not-compiled"


def test_the_default_rule_compiles_on_cuda_not_on_the_cpu_and_flags_win() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")

    def mode(flag: bool | None, device: torch.device) -> tuple[bool, bool]:
        m = compile_mode(argparse.Namespace(compile=flag, compile_backend="inductor"), device)
        return m.wanted, m.forced

    assert mode(None, cuda) == (True, False) and mode(None, cpu) == (False, False)
    assert mode(True, cpu) == (True, True) and mode(False, cuda) == (False, False)
    assert FIRST_COMPILE_S["inductor"] > FIRST_COMPILE_S["aot_eager"] > 0


def test_the_eager_tables_leave_the_compiled_pass_its_share() -> None:
    on, off = CompileMode(True, False, "inductor", ""), CompileMode(False, False, "inductor", "")
    share = 100.0 + RESERVE_S  # 100 s usable
    assert eager_deadline(0.0, share, off) == share
    assert eager_deadline(0.0, share, on) == pytest.approx(50.0 + RESERVE_S)
    assert eager_deadline(0.0, 10.0, on) == 10.0  # never past the family's share
    assert eager_deadline(0.0, math.inf, on) == math.inf
