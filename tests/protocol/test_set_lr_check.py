"""One set_lr check (protocol) for the CLI, the cockpit's prompt and the backend's socket:
a factor must be a finite positive number (NaN or ∞ would make the learning rate NaN)."""

from __future__ import annotations

import math

import pytest

from growcockpit.protocol.commands import CommandError, CommandRequest
from growcockpit.ui.screens.command_text import factor_problem as _factor_problem


@pytest.mark.parametrize("factor", [math.nan, math.inf, -1.0, 0, True, "0.5"])
def test_set_lr_refuses_what_is_not_a_finite_positive_number(factor: object) -> None:
    with pytest.raises(CommandError, match="positive number"):
        CommandRequest("set_lr", {"factor": factor}).validate()


def test_the_cockpit_prompt_uses_the_same_check() -> None:
    assert _factor_problem("0.5") == ""
    assert _factor_problem("abc") == "a number, e.g. 0.5"
    for bad in ("nan", "inf", "-2", "0"):
        assert "positive number" in _factor_problem(bad), bad
    line = CommandRequest("set_lr", {"factor": 0.5}).encode().replace("0.5", "NaN")
    with pytest.raises(CommandError):
        CommandRequest.decode(line)  # the backend's side refuses it too
