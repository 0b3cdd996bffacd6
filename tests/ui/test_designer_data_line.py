"""The designer's Data tab line says what launching will do with the data source: a
`task:hops` source is generated as the run trains, so the line never promises to tokenize
it (it once read "will tokenize 'task:hops' on launch")."""

from __future__ import annotations

from dataclasses import replace

from repo_paths import REPO

from growcockpit.plan import load_plan
from growcockpit.ui.screens.designer_checks import data_line


def test_a_task_source_is_generated_not_tokenized() -> None:
    plan = load_plan(REPO / "sample_plans" / "cpu-hops-baseline.toml")
    line = data_line(plan)
    assert "tokenize 'task:hops' on launch" not in line
    assert line.startswith("task:hops: generated from the plan's seed")
    assert "fixed vocabulary of 5" in line


def test_a_text_file_still_says_it_will_be_tokenized() -> None:
    plan = load_plan(REPO / "sample_plans" / "cpu-hops-baseline.toml")
    other = replace(plan, data=replace(plan.data, source="no-such-corpus.txt"))
    assert "will tokenize 'no-such-corpus.txt' on launch" in data_line(other)
