"""What ships (the package, benchmarks, sample plans, themes) cites no developer-only file.

A user's clone has no developer notes, so a docstring that sends the reader to one (or to
an issue number of the tracker) is a dead end; say the point in place instead.
"""

from __future__ import annotations

import re

from repo_paths import REPO

SHIPPED = ("growcockpit", "bench", "sample_plans", "themes")
CITES = re.compile(r"methods\.md|NOTES\.md|DESIGN\.md|\b[Ii]ssue \d+")


def cites(text: str) -> list[str]:
    return [m.group(0) for m in CITES.finditer(text)]


def test_no_shipped_file_cites_developer_notes() -> None:
    found = []
    for folder in SHIPPED:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in {".py", ".toml", ".sh", ".md", ".tcss"} or not path.is_file():
                continue
            for word in cites(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(REPO)}: {word}")
    assert not found, "\n".join(found)


def test_the_pattern_catches_each_form() -> None:
    assert cites("see methods.md §8, NOTES.md and DESIGN.md (issue 19 §2)") == [
        "methods.md",
        "NOTES.md",
        "DESIGN.md",
        "issue 19",
    ]
    assert cites("a tissue 3 or an issues list") == []
