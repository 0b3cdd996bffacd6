"""Find the line of a key path in TOML text, without a full parser.

The text is scanned line by line: `[table]` and `[[array]]` headers set the
current table (array-of-tables entries are counted, so the second
`[[stages]]` is "stages[1]"), and `key =` lines inside it are recorded under
their full path ("stages[1].train"). A path that is not written falls back to
its nearest written parent (the table header), then to None.
"""

from __future__ import annotations

import re

_AOT_HEADER = re.compile(r"^\s*\[\[\s*([^\[\]#]+?)\s*\]\]\s*(#.*)?$")
_HEADER = re.compile(r"^\s*\[\s*([^\[\]#]+?)\s*\]\s*(#.*)?$")
_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'[^']*'"
_PART = rf"(?:{_BARE}|{_QUOTED})"
_KEY = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")
_SPLIT = re.compile(rf"{_PART}")
_PARENT = re.compile(r"^(.*?)(\.[^.\[\]]+|\[\d+\])$")


def _parts(dotted: str) -> list[str]:
    return [p.strip("\"'") for p in _SPLIT.findall(dotted)]


class TomlLocator:
    """Line numbers (1-based) of the tables and keys written in a TOML text."""

    def __init__(self, text: str) -> None:
        self.lines: dict[str, int] = {}
        counts: dict[str, int] = {}
        table = ""
        in_multiline: str | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw
            if in_multiline is not None:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            match = _AOT_HEADER.match(line)
            if match:
                name = ".".join(_parts(match.group(1)))
                index = counts.get(name, 0)
                counts[name] = index + 1
                table = f"{name}[{index}]"
                self.lines.setdefault(name, number)
                self.lines.setdefault(table, number)
                continue
            match = _HEADER.match(line)
            if match:
                parts = _parts(match.group(1))
                head = parts[0]
                if head in counts:  # a sub-table of the current array entry
                    parts[0] = f"{head}[{counts[head] - 1}]"
                table = ".".join(parts)
                self.lines.setdefault(table, number)
                continue
            match = _KEY.match(line)
            if match:
                path = ".".join(_parts(match.group(1)))
                full = f"{table}.{path}" if table else path
                self.lines.setdefault(full, number)
                rest = line[match.end() :]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_multiline = quote
                        break

    def line_of(self, key: str) -> int | None:
        """Line of `key`, else of its nearest written parent, else None.

        A top-level key that is not written (a missing required key) points
        at line 1, the start of the root table.
        """
        path = key
        while path:
            if path in self.lines:
                return self.lines[path]
            match = _PARENT.match(path)
            if not match:
                return 1 if path == key and self.lines else None
            path = match.group(1)
        return None


def line_of(text: str | None, key: str) -> int | None:
    """Line of `key` in `text` (see `TomlLocator.line_of`); None without text."""
    if text is None:
        return None
    return TomlLocator(text).line_of(key)
