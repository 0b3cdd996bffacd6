"""A value the user gave is shown in a message the way a plan writes it
("…" for a string, a number bare), never inside Python's '…'."""

from __future__ import annotations

import pytest

from growcockpit.cli.common import UserError, checkpoint_step
from growcockpit.plan.limits import echo
from growcockpit.protocol import CommandError, CommandRequest, lr_factor_problem
from growcockpit.text.safe_text import quoted


def messages() -> list[str]:
    out = [lr_factor_problem("fast"), echo("x\x1b"), echo(3)]
    with pytest.raises(UserError) as caught:
        checkpoint_step("latest", "ctl rollback")
    out.append(str(caught.value))
    with pytest.raises(CommandError) as refused:
        CommandRequest("self_destruct").validate()
    out.append(str(refused.value))
    return out


def test_no_message_quotes_a_value_in_single_quotes() -> None:
    for message in messages():
        assert "'" not in message, message
    assert '"fast"' in messages()[0] and '"latest"' in messages()[3]


@pytest.mark.parametrize(
    "value,shown",
    [("a", '"a"'), ('say "hi"', r'"say \"hi\""'), ("\x1b[2J", r'"\x1b[2J"'), (2.5, "2.5")],
)
def test_quoted(value: object, shown: str) -> None:
    assert quoted(value) == shown
