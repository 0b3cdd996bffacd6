"""Home's run table rules: the column list and filter parsers, sorting (numbers as
numbers, text naturally, missing values last both ways), the filter, plan keys."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from growcockpit.protocol.run_notes import RunNotes
from growcockpit.session.catalog import RunEntry
from growcockpit.session.home_runs import HomeRuns
from growcockpit.session.plan_keys import PlanKeys, flatten
from growcockpit.session.run_columns import (
    BUILTIN,
    MAX_COLUMNS,
    RunRow,
    SortSpec,
    available_columns,
    cell_text,
    columns_problem,
    columns_text,
    filter_problem,
    next_sort,
    parse_columns,
    parse_filter,
    sort_rows,
    table_rows,
)

NOW = 1_000_000.0
KEY = st.from_regex(r"[a-z_][a-z0-9_]{0,8}(\.[a-z0-9_]{1,8}){0,2}", fullmatch=True).filter(
    lambda k: k not in BUILTIN
)
TAG = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,10}", fullmatch=True)
WORD = st.from_regex(r"[a-z0-9=.-]{1,8}", fullmatch=True)


def row(
    name: str, plan: dict[str, object] | None = None, tags: tuple[str, ...] = (), **kw: object
) -> RunRow:
    entry = RunEntry(
        Path("runs") / name, name, kw.pop("status", "completed"), notes=RunNotes("", tags), **kw
    )  # type: ignore[arg-type]
    return RunRow(entry, plan or {})  # type: ignore[arg-type]


# ---- the column list --------------------------------------------------------------
@given(st.lists(st.one_of(KEY, TAG.map(lambda t: f"#{t}")), max_size=MAX_COLUMNS, unique=True))
def test_a_column_list_reads_back(columns: list[str]) -> None:
    assert parse_columns(columns_text(columns)) == tuple(columns)
    assert parse_columns(" ".join(columns)) == tuple(columns)


@given(st.text(max_size=40))
def test_any_text_is_columns_or_a_one_line_problem(text: str) -> None:
    problem = columns_problem(text)
    if problem:
        assert "\n" not in problem
        with pytest.raises(ValueError):
            parse_columns(text)
    else:
        assert len(parse_columns(text)) <= MAX_COLUMNS


@pytest.mark.parametrize(
    "text", ["loss", "model..x", "#", "a/b", "#bad!", " ".join(f"k{i}" for i in range(13))]
)
def test_bad_column_lists_say_why(text: str) -> None:
    assert columns_problem(text)


def test_duplicates_go_and_order_stays() -> None:
    assert parse_columns("optim.lr, model.family optim.lr,#base") == (
        "optim.lr",
        "model.family",
        "#base",
    )


# ---- the filter ---------------------------------------------------------------
@given(st.lists(TAG, max_size=5, unique=True), st.lists(WORD, max_size=5, unique=True))
def test_a_filter_reads_back(tags: list[str], words: list[str]) -> None:
    only = parse_filter(" ".join([*(f"tag:{t}" for t in tags), *words]))
    assert only.tags == tuple(tags) and only.words == tuple(words)
    assert parse_filter(only.text()) == only


@given(st.text(max_size=40))
def test_any_text_is_a_filter_or_a_one_line_problem(text: str) -> None:
    problem = filter_problem(text)
    if problem:
        assert "\n" not in problem
        with pytest.raises(ValueError):
            parse_filter(text)
    else:
        parse_filter(text)


def test_the_filter_keeps_tagged_runs_and_words() -> None:
    rows = [
        row("a", {"model.family": "bert"}, ("baseline",)),
        row("b", {"model.family": "llama"}, ("baseline", "mslt")),
        row("c", {"model.family": "bert"}, ("mslt",)),
    ]

    def names(text: str, cols: tuple[str, ...] = ()) -> list[str]:
        return [r.entry.name for r in table_rows(rows, cols, None, parse_filter(text), NOW)]

    assert names("#baseline") == ["a", "b"]
    assert names("#baseline tag:mslt") == ["b"]
    assert names("BERT", ("model.family",)) == ["a", "c"]  # shown columns count, any case
    assert names("bert") == []  # a column not shown is not searched
    assert names("") == ["a", "b", "c"]
    assert filter_problem("#") and filter_problem("#bad!")


# ---- sorting --------------------------------------------------------------------
def test_numbers_sort_as_numbers_and_missing_values_come_last_both_ways() -> None:
    rows = [
        row("r1", {"optim.lr": 1e-3}),
        row("r2", {}),
        row("r3", {"optim.lr": 5e-4}),
        row("r4", {"optim.lr": 2e-2}),
    ]
    up = sort_rows(rows, SortSpec("optim.lr"), NOW)
    down = sort_rows(rows, SortSpec("optim.lr", descending=True), NOW)
    assert [r.entry.name for r in up] == ["r3", "r1", "r4", "r2"]
    assert [r.entry.name for r in down] == ["r4", "r1", "r3", "r2"]


def test_text_sorts_naturally_and_a_nan_loss_counts_as_missing() -> None:
    rows = [row("run-10"), row("run-9"), row("Run-1")]
    assert [r.entry.name for r in sort_rows(rows, SortSpec("run"), NOW)] == [
        "Run-1",
        "run-9",
        "run-10",
    ]
    losses = [row("a", loss=math.nan), row("b", loss=3.0), row("c", loss=2.0), row("d")]
    for descending, order in ((False, ["c", "b"]), (True, ["b", "c"])):
        got = [r.entry.name for r in sort_rows(losses, SortSpec("loss", descending), NOW)]
        assert got[:2] == order and set(got[2:]) == {"a", "d"}


@given(
    st.lists(
        st.one_of(st.none(), st.integers(-50, 50), st.floats(-1e9, 1e9), st.text(max_size=4)),
        max_size=12,
    ),
    st.booleans(),
)
@example(["¹", "run-2"], False)  # a digit int() cannot read (str.isdigit() said it could)
def test_sorting_keeps_every_row_and_puts_missing_last(
    values: list[object], descending: bool
) -> None:
    rows = [row(f"r{i}", {} if v is None else {"k": v}) for i, v in enumerate(values)]
    out = sort_rows(rows, SortSpec("k", descending), NOW)
    assert sorted(r.entry.name for r in out) == sorted(r.entry.name for r in rows)
    present = [r for r in out if "k" in r.plan]
    assert out[: len(present)] == present  # none missing before one present
    nums = [float(r.plan["k"]) for r in present if isinstance(r.plan["k"], int | float)]
    assert nums == sorted(nums, reverse=descending)


def test_a_header_click_sorts_up_then_down() -> None:
    assert next_sort(None, "loss") == SortSpec("loss")
    assert next_sort(SortSpec("loss"), "loss") == SortSpec("loss", True)
    assert next_sort(SortSpec("loss", True), "step") == SortSpec("step")


def test_cells_show_plan_values_as_written_tags_as_marks() -> None:
    r = row("a", {"model.hidden_size": 128, "optim.lr": 5e-4, "model.tie": True}, ("base",))
    assert [
        cell_text(r, c, NOW)
        for c in ("model.hidden_size", "optim.lr", "model.tie", "#base", "#x", "tags", "gone")
    ] == [
        "128",
        "0.0005",
        "true",
        "✓",
        "–",
        "base",
        "–",
    ]
    assert available_columns([r]) == [
        "model.hidden_size",
        "model.tie",
        "optim.lr",
        "tags",
        "note",
        "#base",
    ]


# ---- plan keys and the remembered choice --------------------------------------------
def test_plan_keys_flatten_and_count_stages_and_follow_the_file(tmp_path: Path) -> None:
    assert flatten({"model": {"family": "bert", "x": [1, 2]}, "stages": [{}, {}], "name": "n"}) == {
        "model.family": "bert",
        "stages": 2,
        "name": "n",
    }
    run = tmp_path / "run"
    run.mkdir()
    keys = PlanKeys()
    assert keys.of(run) == {}
    (run / "plan.toml").write_text('[model]\nfamily = "bert"\n[[stages]]\nsteps = 1\n')
    assert keys.of(run) == {"model.family": "bert", "stages": 1}
    (run / "plan.toml").write_text('[model]\nfamily = "llama"\n')
    assert keys.of(run) == {"model.family": "llama"}
    (run / "plan.toml").write_text("not = [toml")
    assert keys.of(run) == {}


def test_columns_and_sort_are_remembered_and_a_broken_entry_ignored(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    model = HomeRuns(tmp_path, settings)
    assert (model.columns, model.sort) == ((), None)
    assert model.set_columns(("optim.lr", "#base")) and model.set_sort(SortSpec("optim.lr", True))
    again = HomeRuns(tmp_path, settings)
    assert again.columns == ("optim.lr", "#base") and again.sort == SortSpec("optim.lr", True)
    again.set_columns(("#base",))  # the sorted column goes: so does the sort
    assert HomeRuns(tmp_path, settings).sort is None
    settings.write_text('{"home_runs": {"columns": ["bad!"], "sort": 3}}')
    assert (HomeRuns(tmp_path, settings).columns, HomeRuns(tmp_path, settings).sort) == ((), None)
