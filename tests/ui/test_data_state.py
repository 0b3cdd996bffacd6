"""The designer's Data tab: corpus size, token count, cached or will tokenize (and how long)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import wait_for, write_plan

from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.data.corpus import builtin_files
from growcockpit.plan.types import DataSpec
from growcockpit.protocol.token_index import data_state
from growcockpit.ui import GrowCockpitApp

pytestmark = pytest.mark.usefixtures("gc_cache")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    lines = Path(builtin_files()[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.txt").write_text("\n".join(line for line in lines[:3000] if line.strip()))
    return root


def test_data_state_follows_the_token_cache(corpus: Path) -> None:
    before = data_state(str(corpus), "train:600", "bert")
    assert before.startswith("will tokenize") and "MB of text" in before
    blocks = load_blocks(DataSpec(source=str(corpus), tokenizer="train:600", seq_len=32), "bert", 0)
    tokens = len(blocks.train.ids)
    size = (corpus / "a.txt").stat().st_size
    assert data_state(str(corpus), "train:600", "bert") == (
        f"cached: {tokens:,} tokens from {size / 1e6:,.1f} MB (1 file); launches start at once"
    )
    assert data_state(str(corpus), "train:600", "gpt2").startswith("will tokenize")
    with open(corpus / "a.txt", "a") as fh:  # the corpus changed: the cache no longer applies
        fh.write("\nmore text\n")
    after = data_state(str(corpus), "train:600", "bert")
    assert after.startswith("will tokenize") and "at this machine's last measured speed" in after


async def test_designer_data_tab_shows_the_cache_state(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_blocks(DataSpec(source=str(corpus), tokenizer="train:600", seq_len=32), "bert", 0)
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        screen.query_one("#designer-tabs").active = "tab-data"
        await pilot.pause()
        assert screen.doc.plan is not None and screen.doc.plan.model.family == "bert"

        def shown() -> str:
            return str(screen.query_one("#data-state").render())

        for key, value in (("source", str(corpus)), ("tokenizer", "train:600")):
            field = screen.query_one(f"#data-{key}")
            field.value = value
            await pilot.pause()
        await wait_for(pilot, screen.checks.fresh)  # the corpus is looked at in a worker
        assert shown().startswith("cached:") and "1 file" in shown()
        field.value = "train:601"
        await pilot.pause()
        assert shown().startswith("checking the data… cached:")  # the last answer, marked
        await wait_for(pilot, screen.checks.fresh)
        assert shown().startswith("will tokenize") and "MB of text" in shown()
