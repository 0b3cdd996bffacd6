"""The plan name rule: a name becomes a directory under `runs/` and a line on a terminal.

So it is held to a conservative set (ASCII letters, digits, ".", "_", "-",
starting with a letter or digit, at most `MAX_NAME_LEN` characters): no
separator or ".." that could leave `runs/`, no NUL, and no escape, newline or
bidirectional control that could rewrite what a terminal shows.
"""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_LEN = 64
_ALLOWED = re.compile(r"[A-Za-z0-9._-]")
_SAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


def describe_char(ch: str) -> str:
    """A character shown so that it cannot act on the terminal: '"/"' or 'U+202E (RIGHT-TO-LEFT OVERRIDE)'."""
    if ch.isprintable() and ch.isascii() and ch not in "\"'":
        return f'"{ch}"'
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def suggest_name(name: str) -> str:
    """The name with every run of disallowed characters turned into "-", cut to the limit."""
    safe = _SAFE_RUN.sub("-", name).strip("-.")[:MAX_NAME_LEN].strip("-.")
    return safe or "my-plan"


def name_problem(name: str) -> str | None:
    """What is wrong with `name` and how to fix it, or None when it is fine."""
    fix = f'e.g. name = "{suggest_name(name)}"'
    if not name.strip():
        return 'is empty; give the plan a name, e.g. name = "mslt-bert-tiny"'
    if len(name) > MAX_NAME_LEN:
        return f"is {len(name)} characters long; use at most {MAX_NAME_LEN}, {fix}"
    bad = next((ch for ch in name if not _ALLOWED.fullmatch(ch)), None)
    if bad is not None:
        return (
            f"contains {describe_char(bad)}; the name names the run directory, so use only "
            f'letters, digits, ".", "_" and "-", {fix}'
        )
    if not name[0].isalnum():
        return f"starts with {describe_char(name[0])}; start it with a letter or digit, {fix}"
    return None
