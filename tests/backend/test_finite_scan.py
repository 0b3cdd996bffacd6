"""The checkpoint finiteness scan: one read for all tensors, the first culprit named."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from growcockpit.backend.state import finite_scan
from growcockpit.backend.state.checkpoint import non_finite_problem
from growcockpit.backend.state.finite_scan import all_finite, first_non_finite


def tensors() -> list[tuple[str, torch.Tensor]]:
    return [
        ("a", torch.randn(4, 3)),
        ("empty", torch.zeros(0)),
        ("ids", torch.arange(5)),  # not floating: skipped
        ("b", torch.randn(7).to(torch.bfloat16)),
        ("c", torch.full((3,), 3.0e38)),  # huge but finite (a sum would overflow)
    ]


@settings(max_examples=40, deadline=None)
@given(
    which=st.sampled_from(["a", "b", "c"]),
    at=st.integers(0, 2),
    bad=st.sampled_from([float("nan"), float("inf"), float("-inf")]),
)
def test_a_single_non_finite_value_is_found_and_named(which: str, at: int, bad: float) -> None:
    named = tensors()
    assert first_non_finite(named) is None and all_finite(t for _, t in named)
    tensor = dict(named)[which]
    tensor.view(-1)[at] = bad
    assert first_non_finite(named) == which


def test_one_device_read_for_all_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = torch.Tensor.__bool__
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda t: reads.append(1) or real(t))
    assert first_non_finite(tensors()) is None
    assert reads == [1]
    assert finite_scan.all_finite([]) is True


def test_checkpoint_states_name_weights_and_optimizer_slots() -> None:
    state = {
        "model": {"w": torch.ones(3)},
        "optimizer": {"state": {3: {"step": torch.tensor(2.0), "exp_avg": torch.ones(2)}}},
    }
    assert non_finite_problem(state, 1.0) == ""
    state["optimizer"]["state"][3]["exp_avg"][1] = float("inf")
    assert non_finite_problem(state, 1.0) == "optimizer state exp_avg of parameter 3 is not finite"
    state["model"]["w"][0] = float("nan")
    assert non_finite_problem(state, 1.0) == "weight w is not finite"
    assert non_finite_problem(state, float("nan")) == "the last loss is nan"
