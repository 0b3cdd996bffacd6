"""Whether two runs measure the same validation loss, so that a ratio between them means
something.

A loss is nats per token of one tokenizer on one validation set: a run with another
family (MLM against next-token prediction), tokenizer or vocabulary, data source,
validation split or sequence length scores a different quantity, and "reaches the
baseline's loss N× sooner" across them is a number about nothing. Read from the plans
the runs' `run_started` events carry (plain dicts); a fact a plan does not state (an
old log, a hub tokenizer's vocabulary) is not held against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

UNKNOWN = ""


@dataclass(frozen=True)
class Mismatch:
    """One fact two runs' plans disagree on."""

    what: str
    run_value: str
    target_value: str

    @property
    def text(self) -> str:
        return f"{self.what} {self.run_value} vs {self.target_value}"


def _get(plan: Mapping[str, Any], section: str, key: str) -> str:
    table = plan.get(section)
    value = table.get(key) if isinstance(table, Mapping) else None
    return UNKNOWN if value is None else str(value)


def _tokenizer(plan: Mapping[str, Any]) -> str:
    name = _get(plan, "data", "tokenizer")
    return "trained on the corpus" if name.startswith("train:") else name


def _vocab(plan: Mapping[str, Any]) -> str:
    name = _get(plan, "data", "tokenizer")
    return name.partition(":")[2] if name.startswith("train:") else UNKNOWN


FACTS: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("family", lambda p: _get(p, "model", "family")),
    ("tokenizer", _tokenizer),
    ("vocab", _vocab),
    ("data source", lambda p: _get(p, "data", "source")),
    ("validation split", lambda p: _get(p, "data", "val_fraction")),
    ("sequence length", lambda p: _get(p, "data", "seq_len")),
)


def mismatches(
    plan: Mapping[str, Any],
    target: Mapping[str, Any],
    source: Mapping[str, Any] | None = None,
    target_source: Mapping[str, Any] | None = None,
) -> list[Mismatch]:
    """The facts on which `plan` and `target` measure a different loss (empty: comparable).

    `source` / `target_source`: the data each run read, as its `run_started` recorded it
    (plan/source_identity.py). When both runs have one, the data source is compared by
    content, so `own.txt` launched beside the file and `../byo/own.txt` launched elsewhere
    are one source; a run logged before it existed is compared by the plan's text.
    """
    out = []
    for what, fact in FACTS:
        try:
            mine, theirs = fact(plan), fact(target)
        except (TypeError, ValueError):  # a hand-edited log: not held against the run
            continue
        if what == "data source":
            found = _same_data(source, target_source)
            if found is True:
                continue
            if found is False:
                mine, theirs = _where(source, mine), _where(target_source, theirs)
                if mine == theirs:  # one path, another content: the file changed between runs
                    mine, theirs = f"{mine} (as read then)", f"{theirs} (changed since)"
                out.append(Mismatch(what, mine, theirs))
                continue
        if UNKNOWN not in (mine, theirs) and mine != theirs:
            out.append(Mismatch(what, mine, theirs))
    return out


def _same_data(mine: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None) -> bool | None:
    """True/False when both runs recorded their data's fingerprint; None when one did not."""
    a = mine.get("fingerprint") if mine else None
    b = theirs.get("fingerprint") if theirs else None
    if not isinstance(a, str) or not isinstance(b, str) or not a or not b:
        return None
    return a == b


def _where(identity: Mapping[str, Any] | None, text: str) -> str:
    path = identity.get("path") if identity else None
    return path if isinstance(path, str) and path else text


def not_comparable(found: list[Mismatch], target_name: str) -> str:
    """The one line said instead of a ratio."""
    facts = "; ".join(m.text for m in found)
    return f"not comparable with {target_name} ({facts}): a different loss, no ratio"
