"""Test modules are named and described by what they test, never by a tracker's issue number:
a reader looking for the tests of a behaviour finds them by its name (tests/<subject>/
test_<what>.py), and an issue number says nothing to someone without the tracker."""

from __future__ import annotations

import re

from repo_paths import REPO

TESTS = REPO / "tests"
ISSUE_NAME = re.compile(r"(^|_)(i\d+|issues?\d*)(_|$)")
ISSUE_CITE = re.compile(r"\b[Ii]ssues? \d+")
# these hold the patterns' own examples as data
PATTERN_EXAMPLES = {
    TESTS / "architecture" / "test_code_cites_no_notes.py",
    TESTS / "architecture" / "test_tests_by_subject.py",
}


def test_no_test_module_is_named_by_an_issue() -> None:
    named = [
        str(path.relative_to(REPO))
        for path in sorted(TESTS.rglob("*.py"))
        if ISSUE_NAME.search(path.stem)
    ]
    assert not named, named


def test_no_test_module_cites_an_issue_number() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path in PATTERN_EXAMPLES:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE_CITE.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_each_form() -> None:
    assert [bool(ISSUE_NAME.search(s)) for s in ("test_small_defects_i32", "test_issue_7")] == [
        True,
        True,
    ]
    assert not ISSUE_NAME.search("test_rng_issuer") and not ISSUE_NAME.search("test_ui_items")
    assert ISSUE_CITE.search('"""Issue 23 §1.11: the smaller defects"""')
    assert ISSUE_CITE.search("# see issues 10 and 11")
    assert not ISSUE_CITE.search("a tissue 3 or an issues list")
