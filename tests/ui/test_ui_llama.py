"""The cockpit on the Llama family: the designer offers its keys, the dashboard steers a real run."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from repo_paths import TESTS
from textual.widgets import DataTable, Select
from ui_fixtures import screen_text

from growcockpit.protocol import read_status
from growcockpit.resources import sample_plan
from growcockpit.session.run_client import RunClient
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen, DesignerScreen

TINY_LLAMA = TESTS / "plans" / "tiny-llama.toml"
LLAMA_KEYS = ("num-kv-heads", "rope-theta", "tie-embeddings", "rms-norm-eps")


def shown(screen: DesignerScreen, key: str) -> bool:
    return bool(screen.query_one(f"#model-{key}-cell").display)


async def test_designer_offers_llama_keys_only_for_llama() -> None:
    app = GrowCockpitApp(plan_path=sample_plan("cpu-llama-mslt"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen)
        screen.query_one("#designer-tabs").active = "tab-model"
        await pilot.pause()
        assert all(shown(screen, k) for k in LLAMA_KEYS)
        assert screen.query_one("#model-num-kv-heads").value == "2"  # type: ignore[attr-defined]
        kv = screen.query_one("#model-num-kv-heads")
        kv.focus()
        kv.value = "3"  # type: ignore[attr-defined]
        await pilot.pause()
        err = str(screen.query_one("#model-num-kv-heads-err").render())
        assert "does not divide num_heads = 4" in err
        kv.value = "2"  # type: ignore[attr-defined]
        await pilot.pause()
        family = screen.query_one("#model-family", Select)
        family.value = "gpt2"
        await pilot.pause()
        assert not any(shown(screen, k) for k in LLAMA_KEYS)
        family.value = "llama"
        await pilot.pause()
        assert all(shown(screen, k) for k in LLAMA_KEYS)
        assert screen.doc.plan is not None and screen.doc.plan.model.kv_heads == 2


async def test_designer_hides_llama_keys_for_bert() -> None:
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen)
        assert not any(shown(screen, k) for k in LLAMA_KEYS)


async def wait_until(pilot, predicate, what: str, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.1)


@pytest.mark.slow
async def test_dashboard_steers_a_real_llama_run_through_a_grow(
    tmp_path: Path, gc_cache: Path
) -> None:
    plan = tmp_path / "tiny-llama-long.toml"
    text = re.sub(r"^steps = 10$", "steps = 100000", TINY_LLAMA.read_text(), flags=re.M)
    plan.write_text(text.replace("system_every_s = 0\n", "system_every_s = 0.5\n"))
    run_dir = RunClient.launch(plan, tmp_path / "runs")
    try:
        app = GrowCockpitApp(run_dir=run_dir, runs_root=tmp_path / "runs", workdir=tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            await wait_until(
                pilot, lambda: screen.session.state.step >= 3, "live steps from the backend"
            )
            assert len(screen.session.state.layer_rows()) == 3
            await pilot.press("g")  # grow now: 3 → 4 layers by middle stacking
            await pilot.pause(0.3)
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.session.state.stage_index == 1, "the grow stage")
            await wait_until(
                pilot,
                lambda: (
                    len(screen.session.state.layer_rows()) == 4
                    and any(r.grad_norm for r in screen.session.state.layer_rows() if r.trainable)
                ),
                "layer stats of the grown model",
            )
            rows = screen.session.state.layer_rows()
            assert [r.id for r in rows if r.trainable] == [2]
            # every tab draws the Llama run
            await pilot.press("2")
            await pilot.pause(0.5)
            table = screen.query_one("#layer-table-full", DataTable)
            assert table.row_count == 4  # the grown model's 4 blocks
            assert screen.query_one("#heatmap").region.height > 3
            for key, words in (("3", "ms"), ("4", "CPU"), ("5", "grow")):
                await pilot.press(key)
                await pilot.pause(0.5)
                assert words in screen_text(app), (key, words)
            await pilot.press("1")
            await pilot.press("s")
            await pilot.pause(0.3)
            await pilot.press("y")
            await wait_until(pilot, lambda: screen.session.state.finished, "run_finished")
            assert screen.session.state.display_status() == "stopped"
        assert read_status(run_dir).state == "stopped"
    finally:
        status = run_dir / "status.json"
        if status.exists() and read_status(run_dir).is_live():
            os.kill(read_status(run_dir).pid, signal.SIGKILL)
