"""bench/startup.py's summary: ratios per round, medians and minima, phases by median."""

from __future__ import annotations

import sys

import pytest
from repo_paths import REPO

sys.path.insert(0, str(REPO / "bench"))

from startup import one_step_stages, summary  # noqa: E402


def launch(s: float, **phases: float) -> dict[str, object]:
    return {"stage_started_s": s, "phases": phases}


def test_ratios_medians_and_minima_of_interleaved_rounds() -> None:
    rounds = [
        {
            "import_s": 4.0,
            "floor_s": 8.0,
            "launch": launch(6.0, imports=5.0),
            "before": launch(9.0),
        },
        {
            "import_s": 5.0,
            "floor_s": 6.0,
            "launch": launch(6.5, imports=5.5, model=0.2),
            "before": launch(11.0),
        },
        {
            "import_s": 8.0,
            "floor_s": 9.0,
            "launch": launch(10.0, imports=9.0),
            "before": launch(16.0),
        },
    ]
    s = summary(rounds)
    assert s["ratio_median"] == pytest.approx(1.3) and s["ratio_min"] == pytest.approx(1.25)
    assert s["ratio_of_mins"] == pytest.approx(6.0 / 4.0)
    assert s["phases_median_s"] == {"imports": 5.5, "model": 0.0}
    assert summary(rounds, "before")["ratio_median"] == pytest.approx(2.2)
    assert s["floor_ratio_median"] == pytest.approx(6.0 / 5.0)  # 2.0, 1.2, 1.125
    assert s["over_floor_median"] == pytest.approx(6.5 / 6.0)  # 0.75, 1.083, 1.111
    assert s["floor_median_s"] == 8.0


def test_the_floor_imports_the_plans_family_modeling_module() -> None:
    from startup import floor_code

    code = floor_code(REPO / "sample_plans" / "cpu-demo.toml")
    assert code.startswith("import torch, transformers; import transformers.models.")
    assert code.endswith("import transformers.models.bert.modeling_bert")


def test_every_stage_is_cut_to_one_step() -> None:
    sets = one_step_stages(REPO / "sample_plans" / "cpu-demo.toml")
    assert sets == ["stages.0.steps=1", "stages.1.steps=1", "stages.2.steps=1"]
