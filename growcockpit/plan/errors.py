"""The one exception type of the plan package.

Every problem with a plan, from a missing file to a stage an operator cannot
produce, is a `PlanError` whose text is one line::

    <source>:<line>: <key.path>: <what is wrong>; <how to fix>

The line is left out when unknown (a plan built in code, or a key that is not
written in the file), and so is the key path for problems of the file as a
whole (not found, TOML syntax).
"""

from __future__ import annotations


class PlanError(Exception):
    """A problem with a plan, located by source, line and key path.

    Attributes: `source` (file name or a tag such as "<string>"), `line`
    (1-based, or None when unknown), `key` (dotted key path such as
    "stages[1].train", "" for the file as a whole) and `problem` (what is
    wrong and how to fix it, separated by "; ").
    """

    def __init__(
        self, problem: str, key: str = "", source: str = "<plan>", line: int | None = None
    ):
        self.problem = _printable(" ".join(problem.split()), 1000)
        self.key = _printable(key, 120)
        self.source = source
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        head = self.source if self.line is None else f"{self.source}:{self.line}"
        if self.key:
            return f"{head}: {self.key}: {self.problem}"
        return f"{head}: {self.problem}"

    def __repr__(self) -> str:
        return f"PlanError({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlanError):
            return NotImplemented
        return (self.problem, self.key, self.source, self.line) == (
            other.problem,
            other.key,
            other.source,
            other.line,
        )

    def __hash__(self) -> int:
        return hash((self.problem, self.key, self.source, self.line))

    def __reduce__(self) -> tuple[type[PlanError], tuple[str, str, str, int | None]]:
        return (PlanError, (self.problem, self.key, self.source, self.line))


def _printable(text: str, limit: int) -> str:
    """`text` safe for a terminal line: control and bidi characters escaped, cut to `limit`."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
