"""The compare verdict (growcockpit.compare), `growcockpit compare` and the compare screen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ui_fixtures import recorded_events, screen_text, wait_for, write_events, write_recorded_run

from growcockpit.cli import main as cli_main
from growcockpit.compare import fold_events, load_progress, verdict
from growcockpit.plan import default_head_cost, plan_from_dict
from growcockpit.protocol import (
    Eval,
    Event,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
)
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen

PLAN = {
    "name": "tiny",
    "model": {
        "family": "gpt2",
        "hidden_size": 64,
        "num_heads": 4,
        "intermediate_size": 256,
        "max_seq_len": 32,
        "final_layers": 4,
    },
    "data": {"tokenizer": "train:1000", "seq_len": 32},
    "optim": {"batch_size": 4},
    "stages": [{"name": "full", "layers": 4, "enter": "init", "train": "all", "steps": 100}],
}
TOKENS = 4 * 32  # per step
H = default_head_cost(plan_from_dict(PLAN))
BLOCK_FWD = 2.0 * (4 * 64 * 64 + 2 * 64 * 256) * TOKENS  # FLOPs of one block forward per step


def make_events(
    stages: list[tuple[int, list[int], int, float]],
    loss: dict[int, float],
    op_seconds: float = 0.0,
    pause_after: int | None = None,
) -> list[Event]:
    """A run: per stage (layers, trainable ids, steps, step_ms); evals at `loss`'s steps."""
    evs: list[Event] = [RunStarted(run_id="r", plan=PLAN)]
    step = 0
    t = 0.0
    for index, (layers, trainable, steps, step_ms) in enumerate(stages):
        evs.append(
            StageStarted(
                index=index,
                layers=layers,
                trainable_layers=trainable,
                op_seconds=op_seconds if index else 0.0,
                steps=steps,
                step=step,
            )
        )
        for _ in range(steps):
            step += 1
            t += step_ms / 1e3
            evs.append(
                Step(t=t, step=step, stage=index, loss=1.0, tokens=TOKENS * step, step_ms=step_ms)
            )
            if step in loss:
                evs.append(Eval(step=step, stage=index, val_loss=loss[step]))
            if step == pause_after:
                evs += [Paused(t=t, step=step), Resumed(t=t + 300.0, step=step)]
                t += 300.0
    evs.append(RunFinished(status="completed", step=step))
    return evs


def linear(
    slope: float, start: float = 10.0, steps: int = 100, every: int = 10
) -> dict[int, float]:
    return {s: start - slope * s for s in range(every, steps + 1, every)}


def test_growth_run_reaches_the_baseline_sooner_in_time_and_flops() -> None:
    base = fold_events("baseline", make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05)))
    grown = fold_events(
        "grown",
        make_events(
            [(2, [0, 1], 50, 50.0), (4, [0, 1, 2, 3], 50, 100.0)], linear(0.08), op_seconds=0.5
        ),
    )
    v = verdict(grown, base)
    assert v.target_loss == pytest.approx(5.0)
    # 5.0 is crossed at step 62.5: 50 × 50 ms + 0.5 s operator + 12.5 × 100 ms
    assert v.reach is not None and v.reach.step == pytest.approx(62.5)
    assert v.reach.wall_s == pytest.approx(2.5 + 0.5 + 1.25)
    assert v.speedup_wall == pytest.approx(10.0 / 4.25)
    # the cost model (r = 2, everything trained): (1 + r)(L + h) block forwards per step
    base_flops = 100 * 3 * (4 + H) * BLOCK_FWD
    grown_flops = (50 * 3 * (2 + H) + 12.5 * 3 * (4 + H)) * BLOCK_FWD
    assert base.flops == pytest.approx(base_flops)
    assert v.speedup_flops == pytest.approx(base_flops / grown_flops)
    assert v.text == (
        f"reaches baseline's final loss 2.4× sooner (wall), {base_flops / grown_flops:.1f}× (FLOPs)"
    )
    assert verdict(base, base).text == "the target: final loss 5.000"
    # against the grown run's final loss (2.0), the baseline never gets there
    assert verdict(base, grown).text.startswith("not reached (5.000 vs 2.000)")


def test_frozen_bottom_is_priced_as_it_ran() -> None:
    evs: list[Event] = [
        RunStarted(run_id="r", plan=PLAN),
        StageStarted(index=0, layers=4, trainable_layers=[3], embeddings_trainable=False, steps=10),
    ]
    evs += [Step(step=s, tokens=TOKENS * s, step_ms=10.0) for s in range(1, 11)]
    run = fold_events("frozen", evs)
    # refined model: 3 frozen forwards, the top block trained without its input gradient
    # (1 + r/2), the tied head computing only its input gradient ((1 + r/2)·h)
    assert run.flops == pytest.approx(10 * (3 + 2 + 2 * H) * BLOCK_FWD)


def test_not_reached_projects_steps_at_the_current_slope() -> None:
    base = fold_events("baseline", make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05)))
    slow = fold_events("slow", make_events([(4, [0, 1, 2, 3], 100, 50.0)], linear(0.04)))
    v = verdict(slow, base)
    assert v.reach is None and v.speedup_wall is None
    # final 6.0 at step 100, falling 0.04 per step: 25 more steps to 5.0
    assert v.more_steps == 25
    assert v.text == "not reached (6.000 vs 5.000); at the current slope about 25 more steps"
    flat = fold_events("flat", make_events([(4, [0, 1, 2, 3], 100, 50.0)], linear(0.0)))
    assert verdict(flat, base).text.endswith("the loss is not falling")
    assert verdict(flat, base).more_steps is None


def test_pauses_and_evaluations_are_not_training_time() -> None:
    plain = fold_events("a", make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05)))
    paused = fold_events(
        "b", make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05), pause_after=30)
    )
    assert paused.wall_s == pytest.approx(plain.wall_s) == pytest.approx(10.0)
    assert verdict(paused, plain).speedup_wall == pytest.approx(1.0)


def test_no_evaluation_yet() -> None:
    base = fold_events("baseline", make_events([(4, [0, 1, 2, 3], 10, 100.0)], {}))
    other = fold_events("other", make_events([(4, [0, 1, 2, 3], 10, 100.0)], {10: 7.0}))
    assert verdict(other, base).text == "baseline has no evaluation yet: no target"
    assert verdict(base, other).text == "no evaluation yet"


def test_unknown_plan_gives_wall_time_only() -> None:
    evs = make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05))
    evs[0] = RunStarted(run_id="r", plan={"name": "broken", "model": "nope"})
    run = fold_events("x", evs)
    base = fold_events("b", make_events([(4, [0, 1, 2, 3], 100, 200.0)], linear(0.05)))
    v = verdict(run, base)
    assert run.flops is None and v.speedup_flops is None
    assert v.text == "reaches b's final loss 2.0× sooner (wall)"


# ---- growcockpit compare -----------------------------------------------------------


def _recorded(run_dir: Path, step_ms: float) -> Path:
    evs = recorded_events()
    for ev in evs:
        if isinstance(ev, Step):
            ev.step_ms = step_ms
    run_dir.mkdir(parents=True)
    write_events(run_dir / "events.jsonl", evs)
    return run_dir


def test_cli_compare_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = _recorded(tmp_path / "baseline", 1000.0)
    fast = _recorded(tmp_path / "mslt", 500.0)
    assert cli_main(["compare", str(slow), str(fast)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("target: baseline's final validation loss")
    assert "reaches baseline's final loss 2.0× sooner (wall), 1.0× (FLOPs)" in out
    assert cli_main(["compare", str(fast), str(slow), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"]["run"] == "mslt"
    second = data["runs"][1]
    assert second["run"] == "baseline" and second["verdict"]["speedup_wall"] == pytest.approx(
        0.5, rel=1e-2
    )
    assert second["verdict"]["text"] == (
        "reaches mslt's final loss 2.0× later (wall), 1.0× sooner (FLOPs)"
    )
    assert [p["step"] for p in second["evals"]] == [20, 40, 60, 80]
    # --target: a third run as the target, not listed among the compared
    assert cli_main(["compare", str(fast), str(fast), "--target", str(slow)]) == 0


def test_cli_compare_bad_run_dirs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_recorded_run(tmp_path / "good")
    empty = tmp_path / "empty"
    empty.mkdir()
    live = write_recorded_run(tmp_path / "live", finished=False, upto_step=10)
    cases = [
        ([str(good), str(tmp_path / "nope")], "no such run directory"),
        ([str(good), str(empty)], "not a growcockpit run directory"),
        ([str(good)], "two or more run directories"),
        ([str(live), str(good)], "has no validation loss yet"),
    ]
    for argv, message in cases:
        assert cli_main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_compare_runs_headless_without_textual(tmp_path: Path) -> None:
    a = write_recorded_run(tmp_path / "a")
    b = write_recorded_run(tmp_path / "b")
    code = (
        "import sys; from growcockpit.cli import main; rc = main(['compare', sys.argv[1], sys.argv[2]]); "
        "print(rc, [m for m in ('textual', 'torch') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(a), str(b)], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "0 []"


def test_load_progress_reads_a_recorded_run(tmp_path: Path) -> None:
    run = load_progress(write_recorded_run(tmp_path / "r"))
    assert run.plan_name == "mslt-demo" and run.step == 80 and run.status == "completed"
    assert [m.step for m in run.stages] == [40]
    assert run.wall_s == pytest.approx(
        80 * 0.5 + 0.01 + 0.12
    )  # operators count; the 30 s pause is not training time


# ---- the compare screen ------------------------------------------------------------


async def test_compare_screen_plots_and_verdicts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _recorded(runs / "baseline", 1000.0)
    _recorded(runs / "mslt", 500.0)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: len(screen.comparison.runs) == 2)
        assert screen.comparison.runs[screen.comparison.target or 0].name == "baseline"
        text = screen_text(app)
        assert "train loss (TWEMA 0.9) vs training time" in text
        assert "val loss vs training time" in text and "target: baseline" in text
        await pilot.press("x")
        await pilot.pause()
        text = screen_text(app)
        assert "val loss vs estimated FLOPs" in text and "estimated GFLOPs" in text
        assert "target: baseline" in text
        assert "2.0× sooner (wall)" in text
        await pilot.press("g")
        await pilot.pause()
        text = screen_text(app)
        assert "target: mslt" in text and "2.0× later (wall)" in text


GROW_PLAN = {
    **PLAN,
    "name": "growth",
    "stages": [
        {"name": "shallow", "layers": 2, "enter": "init", "train": "all", "steps": 50},
        {"name": "grow", "layers": 4, "enter": "stack", "train": "all", "steps": 50},
    ],
}


def _run_of(run_dir: Path, plan: dict[str, object], step_ms: float, slope: float) -> Path:
    events = make_events([(4, [0, 1, 2, 3], 100, step_ms)], linear(slope))
    events[0] = RunStarted(run_id=run_dir.name, plan=plan)
    run_dir.mkdir(parents=True)
    write_events(run_dir / "events.jsonl", events)
    return run_dir


async def test_compare_many_runs_baseline_target_whole_names_and_selection(
    tmp_path: Path,
) -> None:
    """The baseline (a one-stage plan, whatever its name) is the default
    target, not the newest run; names are whole; six verdict rows fit at 160x48; selected
    and unselected runs read differently."""
    from textual.widgets import DataTable, SelectionList
    from ui_fixtures import set_mtime

    runs = tmp_path / "runs"
    base = _run_of(runs / "full-depth-reference-20260101-000000", PLAN, 1000.0, 0.05)
    set_mtime(base, 1000.0)
    names = [base.name]
    for k in range(5):  # growth runs, all newer than the reference
        run = _run_of(
            runs / f"mslt-emb-late-coalesce-v{k}-2026010{k + 2}-000000", GROW_PLAN, 500.0, 0.05
        )
        set_mtime(run, 2000.0 + k)
        names.append(run.name)
    paths = [runs / n for n in names[::-1]]  # the newest first, as Home would pass them
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen(runs, paths))
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: len(screen.comparison.runs) == 6)
        await pilot.pause()
        c = screen.comparison
        assert c.target is not None and c.runs[c.target].name == base.name

        # whole in the list and in the table (the table fills in after the runs are read)
        def whole() -> bool:
            return all(screen_text(app).count(n) >= 2 for n in names)

        try:
            await wait_for(pilot, whole)
        except AssertionError:  # say what was on screen (this failed twice in CI, never here)
            text = screen_text(app)
            shown = [ln.strip() for ln in text.splitlines() if "-2026010" in ln]
            raise AssertionError({n: text.count(n) for n in names}, shown) from None
        table = screen.query_one("#compare-table", DataTable)
        assert table.row_count == 6 and table.max_scroll_y == 0  # every verdict row shows
        sel = screen.query_one(SelectionList)
        sel.deselect(str(runs / names[1]))
        await pilot.pause()
        prompts = {
            sel.get_option_at_index(i).value: sel.get_option_at_index(i).prompt for i in range(6)
        }
        off, on = prompts[str(runs / names[1])], prompts[str(runs / names[2])]
        assert "dim" in str(off.style) and "bold" in str(on.style)  # type: ignore[union-attr]


async def test_compare_names_stay_whole_when_the_run_list_scrolls(tmp_path: Path) -> None:
    """More runs than the list has rows: its scrollbar takes two columns, and the run list is
    sized for it, so the longest names (whose tails, the launch times, tell runs of one plan
    apart) still show whole instead of losing their last digits."""
    from textual.widgets import SelectionList
    from ui_fixtures import set_mtime

    runs = tmp_path / "runs"
    names = []
    for k in range(60):
        run = _run_of(
            runs / f"mslt-emb-late-coalesce-v{k:02d}-20260102-0000{k:02d}", GROW_PLAN, 500.0, 0.05
        )
        set_mtime(run, 2000.0 + k)
        names.append(run.name)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen(runs, [runs / names[-1], runs / names[-2]]))
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: len(screen.comparison.runs) == 2)
        sel = screen.query_one(SelectionList)
        await wait_for(pilot, lambda: sel.show_vertical_scrollbar)
        await pilot.pause()
        listed = [ln for ln in screen_text(app).splitlines() if "mslt-emb" in ln]
        assert len(listed) >= 30
        for line in listed:
            assert any(n in line for n in names), line  # every visible name whole
