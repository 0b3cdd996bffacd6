"""Home's run table without Textual: which columns it shows, what a cell holds, how rows
sort, and which rows a filter keeps.

Why pure: the table may list hundreds of runs and is re-sorted on every key, so
the rules (numbers compare as numbers, text naturally, a missing value last in
either direction) are plain functions a test can drive with any rows. The values
come from the catalog (`catalog.RunEntry`) and each run's plan keys
(`plan_keys.plan_values`), read in a worker.

A column is a built-in one (run, status, plan, stage, step, loss, age, notes), a
dotted plan key (`model.family`, `optim.lr`, `budget.tokens`; `stages` is the
stage count), `tags`, `note`, or `#TAG` (a mark where the run has that tag).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from growcockpit.protocol.run_notes import parse_tags
from growcockpit.session.catalog import RunEntry
from growcockpit.text.safe_text import quoted

PlanScalar = str | int | float | bool
Value = float | str | None  # what a cell sorts by; None: the run has no such value
BUILTIN: tuple[str, ...] = ("run", "status", "plan", "stage", "step", "loss", "age", "notes")
MAX_COLUMNS = 12
_COLUMN = re.compile(r"#[A-Za-z0-9][A-Za-z0-9._:+-]*|[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*")
COLUMN_RULE = "a plan key (model.family, optim.lr, stages), tags, note or #TAG"
TAG_MARK = "✓"


@dataclass(frozen=True)
class RunRow:
    """One run as the table sees it: its catalog entry and its plan's keys, flattened."""

    entry: RunEntry
    plan: Mapping[str, PlanScalar] = field(default_factory=dict)


@dataclass(frozen=True)
class SortSpec:
    column: str
    descending: bool = False

    def text(self) -> str:
        return f"{self.column} {'↓' if self.descending else '↑'}"


def parse_columns(text: str) -> tuple[str, ...]:
    """`"model.family, optim.lr #base"` -> the extra columns, in order, duplicates dropped.

    Comma- or space-separated; ValueError (one line) names the first bad name. A
    built-in column is always shown, so naming one is an error too."""
    out: list[str] = []
    for name in re.split(r"[,\s]+", text.strip()):
        if not name:
            continue
        if name in BUILTIN:
            raise ValueError(f"{quoted(name, 40)} is always shown; name {COLUMN_RULE}")
        if len(name) > 64 or not _COLUMN.fullmatch(name):
            raise ValueError(f"column {quoted(name, 40)}: use {COLUMN_RULE}")
        if name not in out:
            out.append(name)
    if len(out) > MAX_COLUMNS:
        raise ValueError(f"{len(out)} columns; at most {MAX_COLUMNS}")
    return tuple(out)


def _problem(parse: Callable[[str], object], text: str) -> str:
    """`parse`'s complaint about `text`, or "" (a prompt's check)."""
    try:
        parse(text)
    except ValueError as exc:
        return str(exc)
    return ""


def columns_problem(text: str) -> str:
    return _problem(parse_columns, text)


def columns_text(columns: Sequence[str]) -> str:
    return ", ".join(columns)


def cell(row: RunRow, column: str, now: float) -> Value:
    """What `column` holds for `row`, as it sorts (numbers as floats)."""
    e = row.entry
    builtin: dict[str, Value] = {
        "run": e.name,
        "status": e.status,
        "plan": e.plan or None,
        "stage": e.stage_text(now) or None,
        "step": float(e.step),
        "loss": e.loss,
        "age": now - e.updated if e.updated else None,
        "notes": e.notes.summary(10_000) or None,
        "tags": " ".join(e.notes.tags) or None,
        "note": e.notes.note or None,
    }
    if column in builtin:
        return builtin[column]
    if column.startswith("#"):
        return TAG_MARK if column[1:] in e.notes.tags else None
    value = row.plan.get(column)
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return float(value) if isinstance(value, int | float) else str(value)


def cell_text(row: RunRow, column: str, now: float) -> str:
    """An extra column's cell as shown: numbers as written in the plan, "–" for none."""
    raw = row.plan.get(column) if not column.startswith("#") else None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    value = cell(row, column, now)
    if value is None:
        return "–"
    return f"{value:.4g}" if isinstance(value, float) else value


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """`run-10` after `run-9`: digit runs compare as numbers, the rest case-insensitively."""
    parts = re.split(r"(\d+)", text.casefold())
    return tuple((0, int(p)) if p.isdecimal() else (1, p) for p in parts if p)


def _sortable(value: Value) -> Value:
    """NaN (a diverged loss) has no place among numbers: it sorts with the missing."""
    return None if isinstance(value, float) and math.isnan(value) else value


def sort_rows(rows: Sequence[RunRow], sort: SortSpec | None, now: float) -> list[RunRow]:
    """`rows` ordered by `sort` (None: as given); rows without a value always come last.

    Numbers sort before text in one column (a plan key may hold either)."""
    if sort is None:
        return list(rows)
    valued: list[tuple[RunRow, Value]] = [(r, _sortable(cell(r, sort.column, now))) for r in rows]
    present = [(r, v) for r, v in valued if v is not None]
    numbers = sorted(
        ((r, v) for r, v in present if isinstance(v, float)),
        key=lambda rv: rv[1] or 0.0,
        reverse=sort.descending,
    )
    texts = sorted(
        ((r, v) for r, v in present if isinstance(v, str)),
        key=lambda rv: _natural(str(rv[1])),
        reverse=sort.descending,
    )
    first, second = [r for r, _ in numbers], [r for r, _ in texts]
    if sort.descending:
        first, second = second, first
    return first + second + [r for r, v in valued if v is None]


def next_sort(current: SortSpec | None, column: str) -> SortSpec:
    """A click on `column`'s header: ascending first, then descending, then ascending …"""
    if current is not None and current.column == column:
        return SortSpec(column, not current.descending)
    return SortSpec(column)


@dataclass(frozen=True)
class RunFilter:
    """Runs that carry every tag in `tags` and whose text holds every word in `words`
    (case-insensitive: name, status, plan, note, tags and the shown columns)."""

    tags: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.tags or self.words)

    def text(self) -> str:
        return " ".join([*(f"#{t}" for t in self.tags), *self.words])

    def matches(self, row: RunRow, columns: Sequence[str], now: float) -> bool:
        if not set(self.tags) <= set(row.entry.notes.tags):
            return False
        if not self.words:
            return True
        e = row.entry
        hay = " ".join(
            [e.name, e.status, e.plan, e.notes.note, *e.notes.tags]
            + [cell_text(row, c, now) for c in columns]
        ).casefold()
        return all(w.casefold() in hay for w in self.words)


def parse_filter(text: str) -> RunFilter:
    """`"#baseline tag:mslt bert"` -> the runs tagged baseline and mslt whose text holds
    "bert". ValueError (one line) for a tag that no run could carry."""
    tags: list[str] = []
    words: list[str] = []
    for token in text.split():
        if token.startswith(("#", "tag:")):
            name = token.removeprefix("tag:").removeprefix("#")
            if not name.strip(",#"):
                raise ValueError(f"{quoted(token, 40)}: name a tag after it (#baseline)")
            tags.extend(t for t in parse_tags(name) if t not in tags)
        elif token not in words:
            words.append(token)
    return RunFilter(tuple(tags), tuple(words))


def filter_problem(text: str) -> str:
    return _problem(parse_filter, text)


def table_rows(
    rows: Sequence[RunRow],
    columns: Sequence[str],
    sort: SortSpec | None,
    only: RunFilter,
    now: float,
) -> list[RunRow]:
    """The rows Home shows: those `only` keeps, in `sort`'s order."""
    kept = [r for r in rows if only.matches(r, columns, now)] if only.active else list(rows)
    return sort_rows(kept, sort, now)


def available_columns(rows: Sequence[RunRow]) -> list[str]:
    """Every plan key any run has, then tags, note and #TAG for every tag in use."""
    keys = sorted({k for r in rows for k in r.plan})
    tags = sorted({t for r in rows for t in r.entry.notes.tags})
    return [*keys, "tags", "note", *(f"#{t}" for t in tags)]
