"""What a new user meets first says what it means: counts and speeds in words, the ETA,
`--help`, a `ctl` on no run, `race --set`, and git ignoring saved plans and races; each
checked as the user met it, because each once tripped a new user up."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from repo_paths import REPO

from growcockpit.cli import build_parser, main
from growcockpit.plan import load_plan
from growcockpit.race import build_race
from growcockpit.text.wording import counted, speed_word

RACE_PLAN = REPO / "tests" / "race" / "tiny-race.toml"


def test_ctl_on_a_directory_that_is_no_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ctl", str(tmp_path / "nope"), "pause"]) != 0
    err = capsys.readouterr().err
    assert "no such run directory" in err and "finished or crashed" not in err


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_races_and_saved_plans_are_ignored_by_git() -> None:
    paths = ["races/r/spec.json", "plans/mine.toml", "my-plan.toml"]
    kept = ["pyproject.toml", "sample_plans/cpu-demo.toml", "tests/plans/tiny.toml"]
    res = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths, *kept],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert sorted(res.stdout.split()) == sorted(paths)


def test_counts_and_speeds_read_as_words() -> None:
    assert counted(1, "stage") == "1 stage" and counted(2, "layer") == "2 layers"
    assert speed_word(1.25) == "1.25× faster" and speed_word(0.88) == "1.14× slower"


def test_plan_validate_says_1_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "validate", str(REPO / "sample_plans" / "cpu-baseline.toml")]) == 0
    out = capsys.readouterr().out
    assert "(1 stage, " in out and "1 stages" not in out


def test_help_says_a_bare_growcockpit_opens_home() -> None:
    text = build_parser().format_help()
    assert "Home" in text and "CPU demo" not in text


def test_race_takes_set_like_train(tmp_path: Path) -> None:
    args = build_parser().parse_args(["race", str(RACE_PLAN), "--set", "optim.lr=7e-4"])
    assert args.sets == ["optim.lr=7e-4"]
    spec = build_race([RACE_PLAN], [], [0], tmp_path, budget_fraction=0.5, fixed=("optim.lr=7e-4",))
    for candidate in spec.candidates:  # the growth plan and its baseline alike
        assert load_plan(candidate.plan_files[0]).optim.lr == 7e-4
    assert [c.key for c in spec.candidates] == [
        c.key
        for c in build_race([RACE_PLAN], [], [0], tmp_path / "b", budget_fraction=0.5).candidates
    ]  # labels name the --vary choices only


@pytest.mark.parametrize(
    ("status", "eta"), [("completed", "done"), ("stopped", "–"), ("crashed", "–")]
)
def test_eta_says_done_only_for_a_completed_run(status: str, eta: str) -> None:
    from growcockpit.session.run_state import RunState
    from growcockpit.ui.widgets.run_header import header_text

    state = RunState()
    state.status = status
    text = header_text(state, now=0.0).plain
    assert f"ETA stage {eta} · run {eta}" in text


def test_the_header_shows_the_scaled_lr_right_after_set_lr() -> None:
    from growcockpit.protocol import CommandEvent, Step
    from growcockpit.session.run_state import RunState

    state = RunState()
    state.apply_all(
        [
            Step(t=1.0, step=5, stage=0, loss=5.0, lr=1e-3),
            CommandEvent(
                t=2.0, id="a", command="set_lr", args={"factor": 0.5}, accepted=True, step=5
            ),
        ]
    )
    assert state.lr == pytest.approx(5e-4) and state.lr_scale == 0.5
    state.apply(Step(t=3.0, step=6, stage=0, loss=5.0, lr=4.9e-4))  # the backend's own value wins
    assert state.lr == pytest.approx(4.9e-4)


def test_one_layer_reads_as_one_layer_where_a_user_meets_it() -> None:
    """A 1-layer stage (the late-expansion plans start with one) said "1 layers" in the
    dashboard's event log, the export and an advance's answer; a 1-layer model in plan show."""
    from growcockpit.backend.control.commands import Advance, decide
    from growcockpit.backend.control.progress import Progress
    from growcockpit.export.records import _stage_text
    from growcockpit.plan import loads_plan
    from growcockpit.plan.show import format_plan
    from growcockpit.protocol import CommandRequest, StageStarted
    from growcockpit.session.run_state import RunState

    stage = StageStarted(index=0, name="one", layers=1, trainable_layers=[0], operator="init")
    state = RunState()
    state.apply(stage)
    logged = [e.text for e in state.log if e.kind == "stage"]
    assert logged and "1 layer," in logged[0] and "1 layers" not in logged[0]
    assert "1 layer via init" in _stage_text(stage)

    text = (REPO / "sample_plans" / "cpu-gpt2-late.toml").read_text()
    one = text.replace("final_layers = 8", "final_layers = 1")
    one = one[: one.index("[[stages]]")] + '[[stages]]\nname = "one"\nlayers = 1\nsteps = 10\n'
    shown = format_plan(loads_plan(one, "one.toml"))
    assert "1 layer ×" in shown and "(1 layer, all trained)" in shown and "1 layers" not in shown

    late = loads_plan(text, "late.toml")
    late.stages[1].layers = 1  # an advance into a 1-layer stage (as a V-cycle's way down)
    answer = decide(CommandRequest("advance"), Progress(late, 0, 5, None, "running"))
    assert isinstance(answer, Advance) and "to 1 layer)" in answer.message
