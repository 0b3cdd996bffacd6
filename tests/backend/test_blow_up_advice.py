"""The advice after a blow-up is a command `ctl` accepts, relative to the
checkpoint's own LR scale, and it says that the rolled-back run still waits for `resume`."""

from __future__ import annotations

import re

import pytest

from growcockpit.backend.loop.sentinel import SpikeSeen
from growcockpit.backend.loop.stage_events import non_finite_error, rollback_advice, spike_error
from growcockpit.cli.live import rollback_lr_scale
from growcockpit.protocol import CommandRequest


def advised_scale(text: str) -> str:
    found = re.search(r"`growcockpit ctl run rollback (\d+) --lr-scale (\S+)`", text)
    assert found, text
    return found.group(2)


@pytest.mark.parametrize(
    "checkpoint_scale,expected",
    [(1.0, "0.1"), (1e6, "1000"), (0.005, "0.001"), (1e-6, "0.001"), (30.0, "3")],
)
def test_the_advised_scale_is_the_checkpoints_tenth_inside_what_ctl_takes(
    checkpoint_scale: float, expected: str
) -> None:
    text = rollback_advice(200, "run", checkpoint_scale)
    scale = advised_scale(text)
    assert scale == expected
    rollback_lr_scale(scale, "rollback")  # what `ctl` checks before it connects: no UserError
    CommandRequest("rollback", {"step": 200, "lr_scale": float(scale)}).validate()


def test_the_advice_says_resume_after_the_rollback() -> None:
    spike = SpikeSeen(310, "loss", 1.9e6, 5e5, 4.0, 1, 8.0, 10)
    for error in (
        non_finite_error(float("nan"), 1, 310, 200, "run"),
        spike_error(spike, 200, "run"),
    ):
        assert error.message.count("`growcockpit ctl run resume`") == 1, error.message
        rollback, resume = error.message.index("rollback 200"), error.message.index("run resume")
        assert rollback < resume, "resume comes after the rollback"


def test_a_refill_ceiling_spike_says_so() -> None:
    spike = SpikeSeen(310, "loss", 9.4e10, 2.3e10, 4.0, 1, 8.0, 10, ceiling=True)
    message = spike_error(spike, 200, "run", 1.0).message
    assert "over 10x the median 4 from before the last spike" in message, message
    assert "robust SDs" not in message
