"""Every relative link and every repository path named in README.md and docs/*.md exists.

The README is the first thing a user reads in a fresh clone, and it has named files the
repository did not have (developer notes, moved modules). Paths are written in backticks
and abbreviated the way the docs abbreviate them: from the repository root
(`bench/soak.py`, `tests/plans/`) or from the package (`backend/loop/step.py`,
`plan/types.py`). A backticked token counts as a repository path when its first part is a
top-level entry of the repository or a subpackage of growcockpit and it names a file (an
extension) or a folder (a trailing slash); anything else (a TensorBoard tag `grow/seconds`,
`runs/<id>/final`, `~/.cache/…`, `checkpoints/step-N/`) names what a run writes, not a file of
the repository. A bare test module name (`test_soak.py`) must exist somewhere in tests/.
"""

from __future__ import annotations

import re
from pathlib import Path

from repo_paths import REPO

PACKAGE = REPO / "growcockpit"
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_PATHLIKE = re.compile(r"^[A-Za-z0-9_.*/{},-]+$")
# outside backticks too (commands, parentheses): a path from the repository root
_ROOTED = re.compile(
    r"(?<![\w/.-])((?:bench|tests|sample_plans|growcockpit|docs|themes)/[\w./{},*-]*\.\w+)"
)


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _roots() -> set[str]:
    top = {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
    pkg = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")}
    return (top | pkg) - {"runs", "out"}


def _expand_braces(token: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", token)
    if m is None:
        return [token]
    head, tail = token[: m.start()], token[m.end() :]
    return [x for alt in m.group(1).split(",") for x in _expand_braces(head + alt + tail)]


def _exists(rel: str) -> bool:
    rel = rel.rstrip("/")
    for base in (REPO, PACKAGE):
        if any(ch in rel for ch in "*?"):
            if any(base.glob(rel)):
                return True
        elif (base / rel).exists():
            return True
    return False


def _path_tokens(text: str) -> list[str]:
    """The backticked tokens that name a repository path (see the module docstring)."""
    roots, out = _roots(), []
    for raw in _BACKTICKED.findall(text):
        token = raw.split("::", 1)[0].strip()
        if not _PATHLIKE.match(token) or token.startswith(("/", "-", ".")):
            continue
        if "/" in token:
            names_a_file = token.endswith("/") or "." in token.rsplit("/", 1)[1]
            if names_a_file and token.split("/", 1)[0] in roots:
                out.append(token)
        elif re.fullmatch(r"test_\w+\.py", token):
            out.append(token)
    out += [m.rstrip(".,;:") for m in _ROOTED.findall(text)]
    return out


def test_every_named_repository_path_exists() -> None:
    test_names = {p.name for p in (REPO / "tests").rglob("test_*.py")}
    missing = []
    for doc in _docs():
        for token in _path_tokens(doc.read_text(encoding="utf-8")):
            for rel in _expand_braces(token):
                ok = rel in test_names if "/" not in rel else _exists(rel)
                if not ok:
                    missing.append(f"{doc.relative_to(REPO)}: `{rel}`")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def _anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out, inside = set(), False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_every_relative_link_resolves() -> None:
    broken = []
    for doc in _docs():
        for target in _LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = doc.parent / path if path else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(REPO)}: ({target})")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{doc.relative_to(REPO)}: ({target}): no such heading")
    assert not broken, "links in the docs that lead nowhere:\n" + "\n".join(broken)


def test_the_docs_name_no_developer_only_files() -> None:
    """A user's clone has no developer notes; the docs must not send them looking."""
    named = []
    for doc in _docs():
        for word in ("methods.md", "NOTES.md", "DESIGN.md"):
            if word in doc.read_text(encoding="utf-8"):
                named.append(f"{doc.relative_to(REPO)}: {word}")
    assert not named, "\n".join(named)


def test_the_checker_sees_a_missing_path(tmp_path: Path) -> None:
    """The rule above must catch what it is for: an abbreviated package path that moved."""
    tokens = _path_tokens(
        "see `backend/engine.py`, `runs/<id>/final`, `grow/seconds` and `test_nope.py`"
    )
    assert tokens == ["backend/engine.py", "test_nope.py"]
    assert _path_tokens("(bench/results/x-{a,b}.json).") == ["bench/results/x-{a,b}.json"]
    assert _expand_braces("r/x-{a,b}.json") == ["r/x-a.json", "r/x-b.json"]
    page = tmp_path / "p.md"
    page.write_text("# Per-stage cost (`bench/x.py`): done\n```\n# not a heading\n```\n")
    assert _anchors(page) == {"per-stage-cost-benchxpy-done"}
    assert not _exists("backend/engine.py")
    assert _exists("backend/loop/engine.py")
