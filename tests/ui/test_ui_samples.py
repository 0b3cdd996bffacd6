"""The dashboard's Samples tab (7): the latest evaluation's text, stepping back through
earlier ones, the empty state; SVG snapshots at 160×48 and 80×24."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_fixtures import T0, screen_text, settle, write_events, write_recorded_run

from growcockpit.protocol.samples_event import Samples, SampleText
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets.samples_panel import SamplesPanel

CLOCK = T0 + 100.0
WORDS = {20: "lord", 40: "king", 60: "queen"}


def masked_samples() -> list[Samples]:
    """Three evaluations of the recorded BERT run, each guessing another word."""
    return [
        Samples(
            t=T0 + step * 0.5 + 0.1,
            step=step,
            stage=0 if step <= 40 else 1,
            kind="masked",
            samples=[
                SampleText(
                    prompt="The [MASK] is dead.",
                    text=f"The {word} is dead.",
                    top_tokens=[[word, "man", "duke"]],
                    top_probs=[[0.42, 0.2, 0.05]],
                ),
                SampleText(
                    prompt="To be, or not to [MASK].",
                    text="To be, or not to be.",
                    top_tokens=[["be", "die", "sleep"]],
                    top_probs=[[0.61, 0.1, 0.04]],
                ),
            ],
        )
        for step, word in WORDS.items()
    ]


def run_with_samples(tmp_path: Path) -> Path:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    return write_events(run_dir / "events.jsonl", masked_samples()).parent


def _app(run_dir: Path, tmp_path: Path) -> GrowCockpitApp:
    return GrowCockpitApp(run_dir=run_dir, clock=lambda: CLOCK, workdir=tmp_path, samples=tmp_path)


async def _samples_tab(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("7")
    await pilot.pause(0.3)
    pilot.app.screen.flush_text()  # type: ignore[attr-defined]
    await pilot.pause(0.1)


def _head(app: GrowCockpitApp) -> str:
    return app.screen.query_one(SamplesPanel).render_text().plain.splitlines()[0]


async def test_the_tab_shows_the_latest_and_steps_back_through_evaluations(tmp_path: Path) -> None:
    app = _app(run_with_samples(tmp_path), tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _samples_tab(pilot)
        panel = app.screen.query_one(SamplesPanel)
        assert panel.has_focus
        assert _head(app).startswith("evaluation 3 of 3 (the latest) · step 60 · stage 2 grow-4")
        text = screen_text(app)
        assert "The queen is dead." in text and "[MASK] 1: queen 42% · man 20% · duke 5.0%" in text
        await pilot.press("left")
        assert _head(app).startswith("evaluation 2 of 3 · step 40 · stage 1 shallow")
        assert "The king is dead." in screen_text(app)
        await pilot.press("home")
        assert _head(app).startswith("evaluation 1 of 3 · step 20")
        await pilot.press("left")  # already the first
        assert _head(app).startswith("evaluation 1 of 3")
        await pilot.press("right", "right")
        assert panel.view.step is None  # at the latest again: it follows new evaluations
        await pilot.press("left", "end")
        assert _head(app).startswith("evaluation 3 of 3 (the latest)")


async def test_a_held_evaluation_stays_while_new_ones_arrive(tmp_path: Path) -> None:
    run_dir = run_with_samples(tmp_path)
    app = _app(run_dir, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _samples_tab(pilot)
        await pilot.press("left")
        later = Samples(t=T0 + 40, step=80, stage=1, kind="masked", samples=[])
        write_events(run_dir / "events.jsonl", [later])
        panel = app.screen.query_one(SamplesPanel)
        for _ in range(100):
            app.screen.flush_text()  # type: ignore[attr-defined]
            if len(panel.history) == 4:
                break
            await pilot.pause(0.05)
        assert _head(app).startswith("evaluation 2 of 4 · step 40")


async def test_the_empty_tab_says_how_to_turn_samples_on(tmp_path: Path) -> None:
    app = _app(write_recorded_run(tmp_path / "run", finished=False, upto_step=60), tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _samples_tab(pilot)
        text = " ".join(screen_text(app).split())
        assert "Samples are off in this run's plan" in text
        assert "[samples]" in text and "every_evals = 1" in text


async def test_a_causal_continuation_follows_its_prompt(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=20)
    sample = SampleText(prompt="To be", text=", or not to be")
    ev = Samples(t=T0 + 11, step=20, stage=0, kind="causal", temperature=0.8, seed=3)
    ev.samples = [sample]
    write_events(run_dir / "events.jsonl", [ev])
    app = _app(run_dir, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _samples_tab(pilot)
        text = screen_text(app)
        assert "To be, or not to be" in text
        assert "sampled at temperature 0.8, seed 3" in text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_samples_tab_snapshot(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = _app(run_with_samples(tmp_path), tmp_path)
    assert snap_compare(app, terminal_size=size, run_before=_samples_tab)


def test_empty_samples_tab_snapshot(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _app(write_recorded_run(tmp_path / "run", finished=False, upto_step=60), tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_samples_tab)


def test_model_text_cannot_drive_the_terminal() -> None:
    """A byte-level tokenizer can decode to ESC or a bidirectional override: the tab and the
    event log print them escaped; the text's own line breaks stay line breaks."""
    from growcockpit.session.run_state import RunState

    hostile = "\x1b[2J gone\u202eevil\nnext line"
    ev = Samples(step=5, samples=[SampleText(prompt="To be", text=hostile)])
    panel = SamplesPanel()
    panel.history = [ev]
    plain = panel.render_text().plain
    assert "\x1b" not in plain and "\u202e" not in plain
    assert "\\x1b[2J gone\\u202eevil\nnext line" in plain
    state = RunState()
    state.apply(ev)
    assert state.log[-1].text.isprintable() and "\\x1b" in state.log[-1].text


def test_a_mask_without_guesses_draws_as_a_mask() -> None:
    """A hand-edited log may hold an empty guesses row (its types are right)."""
    sample = SampleText(prompt="The [MASK] [MASK]", top_tokens=[[]], top_probs=[])
    panel = SamplesPanel()
    panel.history = [Samples(step=5, kind="masked", samples=[sample])]
    assert panel.render_text().plain.splitlines()[2] == "The [MASK] [MASK]"
