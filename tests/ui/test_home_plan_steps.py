"""Home's "steps" column is what a run of the plan trains: a [budget] fill stage's fitted
steps, not the ones written (`cpu-gpt2-ramp` once read 161 steps and trained 460)."""

from __future__ import annotations

from pathlib import Path

from growcockpit.plan import load_plan
from growcockpit.resources import sample_plans_dir
from growcockpit.session.catalog import list_plans


def test_steps_column_counts_the_budget_fill(tmp_path: Path) -> None:
    entries = {e.path.name: e for e in list_plans(tmp_path, samples=sample_plans_dir())}
    budgeted = [n for n in entries if load_plan(entries[n].path).budget is not None]
    assert "cpu-gpt2-ramp.toml" in budgeted and "cpu-gpt2-late.toml" in budgeted
    for name, entry in entries.items():
        assert entry.steps == load_plan(entry.path).total_steps, name


def test_a_file_that_is_not_a_plan_yet_shows_its_written_steps(tmp_path: Path) -> None:
    (tmp_path / "draft.toml").write_text('name = "d"\n[[stages]]\nname = "a"\nsteps = 7\n')
    [entry] = list_plans(tmp_path, samples=tmp_path / "none")
    assert entry.steps == 7
