"""A tiny CPU run through a 2-candidate probe: every candidate's curve in the log, the
winner written into the plan, and the run after the probe exactly the run of the plan
with the winner in place (weights bit for bit: the probe restored weights, optimizer and
RNG between candidates)."""

from __future__ import annotations

from pathlib import Path

import torch
from repo_paths import TESTS
from run_fixtures import make_trainer, of_type

from growcockpit.plan import dump_plan, loads_plan
from growcockpit.plan.probe import candidate_stage, with_stage
from growcockpit.protocol import read_all
from growcockpit.protocol.events import PlanChanged, ProbeCandidate, ProbePicked, Step

PROBE = (TESTS / "plans" / "tiny-probe.toml").read_text()


def test_a_probe_trains_each_candidate_and_goes_on_with_the_best(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path / "probe", PROBE)
    assert trainer.run() == "completed"
    events = read_all(tmp_path / "probe" / "events.jsonl")
    tried = of_type(events, ProbeCandidate)
    assert [(c.index, c.step, c.steps) for c in tried] == [(0, 6, [7, 8, 9]), (1, 6, [7, 8, 9])]
    assert [c.label for c in tried] == ["stack (top)", "stack (top, zero init)"]
    assert all(len(c.losses) == 3 and c.val_loss is not None for c in tried)
    assert tried[0].losses != tried[1].losses  # two different operators
    (picked,) = of_type(events, ProbePicked)
    losses = [c.val_loss for c in tried]
    assert picked.val_losses == losses and picked.winner == losses.index(min(losses))
    changed = of_type(events, PlanChanged)[-1]
    assert changed.from_stage == 1 and changed.plan["stages"][1]["enter"] == "stack"
    # the run's own step events: each step once, the probes' steps not among them
    steps = [e.step for e in of_type(events, Step)]
    assert steps == sorted(set(steps)) and steps[-1] == 12

    plan = loads_plan(PROBE)
    probe = plan.stages[1]
    winner = with_stage(plan, 1, candidate_stage(probe, probe.candidates[picked.winner]))
    assert trainer.plan.stages[1] == winner.stages[1]
    direct = make_trainer(tmp_path / "direct", dump_plan(winner))
    assert direct.run() == "completed"
    for (name, a), (_, b) in zip(
        trainer.model.state_dict().items(), direct.model.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
