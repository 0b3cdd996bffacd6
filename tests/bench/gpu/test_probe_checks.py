"""The loan's first check (bench/gpu/probe_checks.py): a family's step on the device against
the CPU's, to a tolerance, and the first divergent operator named when they differ."""

from __future__ import annotations

import sys

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
