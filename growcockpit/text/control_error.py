"""The one error the control socket raises, on either side of it."""

from __future__ import annotations


class ControlError(Exception):
    """The control socket cannot be reached or did not answer; one line, with the fix."""


def one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")
