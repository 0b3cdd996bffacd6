"""Each recipe of docs/data.md, as written: a file on disk, `plan validate`, a first step.

The Python of each recipe builds its data with `datasets` in a temporary
directory (nothing is downloaded); its `[data]` table is put into a tiny GPT-2
plan that must have no problem and then train.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo_paths import REPO
from run_fixtures import make_trainer

from growcockpit.backend.data.blocks import load_blocks
from growcockpit.plan import loads_plan
from growcockpit.plan.load import plan_file_problems
from growcockpit.protocol import read_all
from growcockpit.protocol.events import RunFinished, Step

pytestmark = pytest.mark.usefixtures("gc_cache")

DOC = REPO / "docs" / "data.md"
BASE = """
name = "recipe"
seed = 0
[model]
family = "gpt2"
hidden_size = 32
num_heads = 2
intermediate_size = 64
max_seq_len = 32
final_layers = 1
[optim]
batch_size = 4
warmup_steps = 0
[metrics]
system_every_s = 0
eval_every_steps = 2
eval_batches = 1
[[stages]]
name = "only"
layers = 1
steps = 2
"""
_BLOCK = re.compile(r"```(python|toml)\n(.*?)```", re.S)


def recipes() -> list[tuple[str, str, str]]:
    """(title, python, [data] toml) of every recipe under "## Recipes"."""
    section = DOC.read_text().split("## Recipes", 1)[1].split("\n## ", 1)[0]
    out = []
    for part in section.split("\n### ")[1:]:
        title = part.split("\n", 1)[0].strip()
        blocks = dict((kind, body) for kind, body in _BLOCK.findall(part))
        out.append((title, blocks["python"], blocks["toml"]))
    return out


def test_the_page_has_every_case() -> None:
    titles = " | ".join(t for t, _, _ in recipes()).lower()
    for case in (
        "save_to_disk",
        "not called",
        ".arrow",
        "parquet",
        "jsonl",
        "plain text",
        "tokenizer",
    ):
        assert case in titles, f"docs/data.md has no recipe for {case}: {titles}"


@pytest.mark.parametrize(("title", "python", "data"), recipes(), ids=[r[0] for r in recipes()])
def test_recipe_validates_and_trains(
    title: str, python: str, data: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(python, f"docs/data.md: {title}", "exec"), {})
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(BASE + data)
    plan, problems = plan_file_problems(plan_file)
    assert problems == [], [str(p) for p in problems]
    trainer = make_trainer(tmp_path / "run", plan_file.read_text())
    assert trainer.run() == "completed"
    events = read_all(tmp_path / "run" / "events.jsonl")
    assert any(isinstance(e, Step) for e in events)
    assert any(isinstance(e, RunFinished) for e in events)


def test_validation_split_is_what_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DatasetDict's validation split, not 1/val_fraction of train, is the held-out set."""
    from datasets import Dataset, DatasetDict

    monkeypatch.chdir(tmp_path)
    train = [f"train line {i} alpha beta gamma delta" for i in range(300)]
    val = ["zeta " * 60]  # text that appears nowhere in train
    DatasetDict(
        {
            "train": Dataset.from_dict({"text": train}),
            "validation": Dataset.from_dict({"text": val}),
        }
    ).save_to_disk("dd")
    plan = loads_plan(BASE + '[data]\nsource = "dd"\ntokenizer = "train:300"\nval_fraction = 0.5\n')
    blocks = load_blocks(plan.data, "gpt2", 0)
    assert len(blocks.train) == len(blocks.train.ids) // 32  # nothing of train held out
    held_out = [blocks.tokenizer.decode(row) for row in blocks.val[0 : len(blocks.val)]]
    trained = blocks.tokenizer.decode(blocks.train[0 : len(blocks.train)].flatten())
    assert held_out and all("zeta zeta" in text for text in held_out)
    assert "zeta" not in trained
