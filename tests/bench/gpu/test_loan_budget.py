"""The loan's one budget: written once in bench/gpu_check.sh's header, the same table as the
parts' caps the loan runs by (bench/gpu/loan_parts.py), summing to ≤ 540 s of command time."""

from __future__ import annotations

import re
import sys

from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from loan_parts import LIMIT_S, PARTS, PREAMBLE_S, SUMMARY_S, budget_s, caps  # noqa: E402

HEADER = re.compile(r"^#   (\w+) +(\d+) s(?: |$)")


def header_caps() -> dict[str, int]:
    text = (REPO / "bench" / "gpu_check.sh").read_text()
    head = text.split("\nset -euo pipefail", 1)[0]
    return {m.group(1): int(m.group(2)) for m in map(HEADER.match, head.splitlines()) if m}


def test_the_header_states_the_parts_caps_and_their_sum_within_540_s() -> None:
    stated = header_caps()
    total = stated.pop("total")
    want = {"preamble": PREAMBLE_S, **{p.name: p.gpu_s for p in PARTS}, "summary": SUMMARY_S}
    assert stated == want  # the header and the loan run by one table
    assert total == sum(stated.values()) == budget_s()
    assert total <= LIMIT_S == 540


def test_a_rehearsal_shares_out_exactly_its_budget() -> None:
    for budget in (120.0, 420.0):
        shares = caps(budget)
        used = sum(s for _, s in shares) + budget * (PREAMBLE_S + SUMMARY_S) / budget_s()
        assert abs(used - budget) < 1e-6
        assert [p.name for p, _ in shares] == [p.name for p in PARTS]
    assert caps(None) == [(p, float(p.gpu_s)) for p in PARTS]


def test_the_readme_links_the_header_and_writes_no_budget_of_its_own() -> None:
    readme = (REPO / "bench" / "README.md").read_text()
    gpu = readme.split("## The GPU loan", 1)[1].split("\n## ", 1)[0]
    assert "gpu_check.sh" in gpu and "header" in gpu
    assert not re.search(r"\b\d{3} s\b", gpu), "the budget is written once, in the header"
