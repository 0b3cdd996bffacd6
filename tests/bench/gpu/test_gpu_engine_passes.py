"""bench/gpu/gpu_engine.py's plain pass: tokens/s and host overhead taken with no sync debug
mode, no warning capture and no profiler (they inflate the very host cost measured); the
instrumented pass after it keeps the sync counts and the busy share."""

from __future__ import annotations

import sys

import pytest
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

import gpu_engine  # noqa: E402


@pytest.mark.usefixtures("gc_cache")
def test_the_plain_pass_runs_the_engine_without_any_instrument(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def instrumented(*_a: object) -> str:
        raise AssertionError("the plain pass went through the instrumented run")

    monkeypatch.setattr(gpu_engine, "_run_counting", instrumented)
    code = gpu_engine.main(
        ["--tiny", "--device", "cpu", "--passes", "plain", "--steps", "4", "--log-every", "2"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("gpu_engine: batch="))
    assert " pass=plain tokens_per_s=[" in line and "host_overhead_pct=[" in line
    assert "busy_pct" not in line and "syncs_per_step" not in line
    assert "plain (no sync debug mode, no profiler)" in out


def test_passes_other_than_plain_and_instrumented_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert gpu_engine.main(["--tiny", "--passes", "plain,fast"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gpu_engine: --passes plain,fast: a comma list of plain, instrumented"]
