"""A command with an argument it does not take is refused before it is sent
(`advance` with {"steps": 5} used to be carried out as a plain advance)."""

from __future__ import annotations

import pytest

from growcockpit.protocol import CommandError, CommandRequest


@pytest.mark.parametrize(
    "command,args",
    [
        ("advance", {"steps": 5}),
        ("pause", {"x": 1}),
        ("rollback", {"stpe": 200}),
        ("set_lr", {"factor": 0.5, "scale": 2}),
    ],
)
def test_unknown_args_are_refused(command: str, args: dict[str, object]) -> None:
    with pytest.raises(CommandError, match=f"^{command} does not take args"):
        CommandRequest(command, args).validate()
    line = CommandRequest(command, args).encode()
    with pytest.raises(CommandError):
        CommandRequest.decode(line)  # what the backend's control server does with it


@pytest.mark.parametrize(
    "command,args",
    [("advance", {}), ("rollback", {"step": 20, "lr_scale": 0.1}), ("set_lr", {"factor": 2})],
)
def test_known_args_pass(command: str, args: dict[str, object]) -> None:
    CommandRequest(command, args).validate()
