"""The loan's first check (bench/gpu/probe_checks.py): a family's step on the device against
the CPU's, to a tolerance, and the first divergent operator named when they differ."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from grow_fixtures import tiny_model
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from probe_checks import StepCheck, check_family, first_divergent_module  # noqa: E402


def test_a_step_within_tolerance_is_ok_and_one_beyond_names_the_operator() -> None:
    ok = StepCheck("gpt2", "bf16", "cuda", 7.60, 7.62, 2.27, 2.26)
    assert ok.ok and ok.line().endswith(": ok")
    bad = StepCheck("gpt2", "fp32", "cuda", 7.50, 7.62, 2.27, 2.26, "transformer.h.0.attn (X)")
    assert not bad.ok and "MISMATCH at transformer.h.0.attn (X)" in bad.line()
    assert not StepCheck("bert", "bf16", "cuda", float("nan"), 7.6, 1.0, 1.0).ok


def test_the_first_divergent_module_is_named() -> None:
    torch.manual_seed(0)
    reference = tiny_model("gpt2")
    candidate = tiny_model("gpt2")
    ids = torch.randint(0, int(reference.config.vocab_size), (2, 8))
    where = first_divergent_module(reference, candidate, ids, torch.device("cpu"), "fp32")
    assert where.startswith("none")  # the same weights, the same arithmetic
    mlp = candidate.transformer.h[1].mlp.c_fc  # a broken kernel, stood in for by a hook
    mlp.register_forward_hook(lambda _m, _i, out: out * 1.5)
    where = first_divergent_module(reference, candidate, ids, torch.device("cpu"), "fp32")
    assert where.startswith("transformer.h.1.mlp.c_fc (Conv1D)"), where


@pytest.mark.usefixtures("gc_cache")
def test_a_family_step_on_the_cpu_agrees_with_itself_in_fp32_and_bf16() -> None:
    checks = check_family("llama", torch.device("cpu"), ("fp32", "bf16"))
    assert [c.precision for c in checks] == ["fp32", "bf16"]
    assert checks[0].loss_error == 0.0 and all(c.ok for c in checks)


def test_a_mismatch_stops_the_loan_in_one_line_naming_family_and_operator(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import gpu_probe

    bad = StepCheck("bert", "bf16", "cpu", 9.0, 7.6, 2.0, 2.0, "bert.encoder.layer.0 (BertLayer)")
    monkeypatch.setattr(gpu_probe, "check_family", lambda *_a: [bad])
    ladder: list[str] = []
    monkeypatch.setattr(gpu_probe, "ladder", lambda *a: ladder.append("ran"))
    jsonl = tmp_path / "loan.jsonl"
    assert gpu_probe.main(["--jsonl", str(jsonl), "--families", "bert", "--device", "cpu"]) == 4
    stops = [ln for ln in capsys.readouterr().out.splitlines() if "STOP" in ln]
    assert stops == [
        "probe: STOP bert bf16 on cpu: the step differs from the CPU's at "
        "bert.encoder.layer.0 (BertLayer)"
    ]
    assert ladder == []  # nothing expensive after a stop
    kinds = [json.loads(ln)["kind"] for ln in jsonl.read_text().splitlines()]
    assert kinds == ["versions", "step_check", "stop"]
