"""The per-layer-stats warning of a model of no known family names the API the user
called: `growcockpit.track`, the Trainer callbacks or the Lightning callback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from run_fixtures import of_type

from growcockpit.protocol import read_all
from growcockpit.protocol.events import WarningEvent
from growcockpit.tracking import Tracker
from growcockpit.tracking.hf import TrainerTracker
from growcockpit.tracking.lightning import LightningTracker


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        (Tracker, "growcockpit.track"),
        (TrainerTracker, "growcockpit.CockpitCallback (or GrowthCallback)"),
        (LightningTracker, "growcockpit.CockpitLightningCallback"),
    ],
)
def test_the_layers_warning_points_at_the_api_in_use(
    tmp_path: Path, kind: type[Tracker], named: str
) -> None:
    model = torch.nn.Linear(4, 4)
    kind(
        tmp_path / "run", model, torch.optim.SGD(model.parameters(), lr=0.1), console=False
    ).close()
    warned = [w.message for w in of_type(read_all(tmp_path / "run" / "events.jsonl"), WarningEvent)]
    assert [w for w in warned if "pass layers=" in w] == [
        "per-layer stats off: Linear is not a GPT-2, BERT or Llama model; "
        f"pass layers=[...] (its blocks) to {named}"
    ]
