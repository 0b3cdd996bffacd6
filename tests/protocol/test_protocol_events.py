"""Event and command encoding: round trips and forward compatibility."""

from __future__ import annotations

import json
import math

import pytest

from growcockpit.protocol import (
    EVENT_TYPES,
    CommandAck,
    CommandError,
    CommandRequest,
    Event,
    GpuStat,
    LayerStat,
    LayerStats,
    Step,
    System,
    UnknownEvent,
    decode_event,
    encode_event,
    event_from_dict,
)
from growcockpit.protocol import events as ev
from growcockpit.protocol.samples_event import Samples, SampleText

SAMPLES: dict[str, Event] = {
    "run_started": ev.RunStarted(
        seq=1,
        t=1.5,
        run_id="r1",
        plan={"name": "p", "stages": [{"layers": 3}]},
        device="cuda:0",
        world_size=2,
        pid=42,
        versions={"torch": "2.13.0"},
        resumed_from="checkpoints/step-10",
    ),
    "stage_started": ev.StageStarted(
        seq=2,
        t=2.0,
        index=1,
        name="grow-6",
        layers=6,
        width=768,
        trainable_layers=[3, 4, 5],
        embeddings_trainable=False,
        head_trainable=True,
        operator="stack",
        op_seconds=0.25,
        steps=100,
        advance="manual",
        step=500,
        reason="plateau",
    ),
    "plateau": ev.PlateauCheck(
        seq=3,
        t=3.0,
        step=7,
        stage=1,
        ema=4.25,
        rate=0.125,
        min_delta=0.05,
        patience=20,
        seen=20,
        fired=False,
    ),
    "step": ev.Step(
        seq=3,
        t=3.0,
        step=7,
        stage=1,
        loss=2.5,
        lr=1e-4,
        tokens=4096,
        tokens_per_s=1234.5,
        step_ms=10.0,
        fwd_ms=3.0,
        bwd_ms=6.0,
        opt_ms=1.0,
        data_ms=None,
    ),
    "layer_stats": ev.LayerStats(
        seq=4,
        t=4.0,
        step=7,
        stage=1,
        layers=[
            LayerStat(id=0, trainable=False, weight_norm=3.0),
            LayerStat(
                id=1,
                trainable=True,
                grad_norm=0.5,
                weight_norm=3.5,
                update_ratio=1e-3,
                fwd_ms=0.1,
                bwd_ms=0.2,
            ),
        ],
    ),
    "system": ev.System(
        seq=5,
        t=5.0,
        gpus=[
            GpuStat(
                index=0,
                name="H200",
                util=97.0,
                mem_used=10,
                mem_total=20,
                power_w=500.0,
                temp_c=60.0,
            ),
            GpuStat(index=1),
        ],
        cpu_pct=12.5,
        rss_bytes=1 << 30,
        ram_used=1 << 31,
        ram_total=1 << 34,
    ),
    "rank_memory": ev.RanksMemory(
        seq=5,
        t=5.5,
        step=10,
        stage=1,
        strategy="fsdp",
        world_size=2,
        ranks=[
            ev.RankMemory(rank=0, params=100, grads=50, optimizer=100, device_peak=900, rss=7),
            ev.RankMemory(rank=1, params=100, grads=50, optimizer=100),
        ],
    ),
    "eval": ev.Eval(seq=6, t=6.0, step=100, stage=1, val_loss=2.0, val_ppl=7.39),
    "scalars": ev.Scalars(seq=6, t=6.0, step=100, values={"grad_norm": 0.5, "acc": 0.25}),
    "grow": ev.Grow(
        seq=7,
        t=7.0,
        step=100,
        stage=2,
        operator="stack",
        from_layers=3,
        to_layers=6,
        from_width=256,
        to_width=256,
        seconds=0.5,
        loss_before=2.0,
        loss_after=2.1,
        detail="top",
    ),
    "checkpoint": ev.Checkpoint(seq=8, t=8.0, step=100, path="checkpoints/step-100", reason="stop"),
    "command": ev.CommandEvent(
        seq=9,
        t=9.0,
        id="abc",
        command="set_lr",
        args={"factor": 0.5},
        accepted=False,
        reason="no",
        step=3,
    ),
    "plan_changed": ev.PlanChanged(
        seq=9,
        t=9.5,
        step=3,
        from_stage=1,
        plan={"name": "p", "stages": [{"name": "a", "layers": 2, "steps": 5}]},
    ),
    "rolled_back": ev.RolledBack(
        seq=9,
        t=9.8,
        step=2,
        stage=0,
        stage_entered=True,
        step_in_stage=2,
        lr_scale=0.25,
        tokens=512,
        checkpoint="runs/r/checkpoints/step-2",
        from_step=3,
        set_aside=1,
    ),
    "paused": ev.Paused(seq=10, t=10.0, step=5, reason="manual advance"),
    "resumed": ev.Resumed(seq=11, t=11.0, step=5),
    "waiting": ev.AwaitingAdvance(seq=15, t=15.0, step=8, stage=1, message="waiting"),
    "warning": ev.WarningEvent(seq=12, t=12.0, message="slow data", step=4),
    "error": ev.Error(seq=13, t=13.0, message="boom", traceback="Traceback...", step=None),
    "run_finished": ev.RunFinished(
        seq=14, t=14.0, status="stopped", step=9, final_path="final", message="bye"
    ),
    "probe_candidate": ev.ProbeCandidate(
        seq=16,
        t=16.0,
        step=20,
        stage=1,
        index=1,
        label="stack (middle)",
        keys={"enter": "stack", "source": "middle"},
        steps=[21, 22],
        losses=[7.5, 7.4],
        val_loss=7.45,
        seconds=1.5,
    ),
    "probe_picked": ev.ProbePicked(
        seq=17, t=17.0, step=20, stage=1, winner=0, label="stack (top)", val_losses=[7.4, 7.45]
    ),
    "startup": ev.StartupPhase(
        seq=18, t=18.0, phase="token_cache", done=True, seconds=4.1, since_launch=9.3, note="x"
    ),
    "model_loaded": ev.ModelLoaded(
        seq=19, t=19.0, path="runs/a/final", family="gpt2", layers=4, parameters=1234, val_loss=5.5
    ),
    "samples": Samples(
        seq=20,
        t=20.0,
        step=40,
        stage=1,
        kind="masked",
        temperature=0.0,
        seed=3,
        samples=[
            SampleText(
                prompt="The [MASK] is dead.",
                text="The king is dead.",
                top_tokens=[["king", "queen"]],
                top_probs=[[0.5, 0.25]],
            )
        ],
    ),
}


def test_nested_sample_texts_decode_to_dataclasses() -> None:
    back = decode_event(encode_event(SAMPLES["samples"]))
    assert isinstance(back, Samples) and isinstance(back.samples[0], SampleText)
    assert back.samples[0].top_tokens == [["king", "queen"]]


def test_samples_cover_every_event_type() -> None:
    assert set(SAMPLES) == set(EVENT_TYPES)


@pytest.mark.parametrize("etype", sorted(EVENT_TYPES))
def test_round_trip(etype: str) -> None:
    event = SAMPLES[etype]
    line = encode_event(event)
    assert "\n" not in line
    data = json.loads(line)
    assert data["type"] == etype and data["seq"] == event.seq and data["t"] == event.t
    back = decode_event(line)
    assert type(back) is EVENT_TYPES[etype]
    assert back == event
    assert back.type == etype
    assert decode_event(line.encode()) == event  # bytes work too


def test_nested_records_decode_to_dataclasses() -> None:
    back = decode_event(encode_event(SAMPLES["layer_stats"]))
    assert isinstance(back, LayerStats)
    assert all(isinstance(layer, LayerStat) for layer in back.layers)
    assert back.layers[1].grad_norm == 0.5
    system = decode_event(encode_event(SAMPLES["system"]))
    assert isinstance(system, System)
    assert isinstance(system.gpus[0], GpuStat) and system.gpus[0].name == "H200"
    memory = decode_event(encode_event(SAMPLES["rank_memory"]))
    assert isinstance(memory, ev.RanksMemory)
    assert isinstance(memory.ranks[1], ev.RankMemory) and memory.ranks[1].device_peak is None


def test_unknown_type_decodes_to_unknown_event_and_reencodes() -> None:
    line = json.dumps({"seq": 5, "t": 1.0, "type": "future_thing", "x": [1, 2]})
    event = decode_event(line)
    assert isinstance(event, UnknownEvent)
    assert event.seq == 5 and event.t == 1.0 and event.type == "future_thing"
    assert event.raw["x"] == [1, 2]
    assert json.loads(encode_event(event)) == json.loads(line)


def test_unknown_fields_are_ignored() -> None:
    data = SAMPLES["step"].to_dict() | {"new_field": 1}
    data_ls = SAMPLES["layer_stats"].to_dict()
    data_ls["layers"][0]["new_field"] = "x"
    assert event_from_dict(data) == SAMPLES["step"]
    assert event_from_dict(data_ls) == SAMPLES["layer_stats"]


def test_missing_fields_take_defaults() -> None:
    event = decode_event('{"type": "step", "seq": 3}')
    assert isinstance(event, Step) and event.seq == 3 and event.loss == 0.0 and event.t == 0.0


def test_nan_loss_survives() -> None:
    back = decode_event(encode_event(Step(seq=1, t=1.0, loss=math.nan)))
    assert isinstance(back, Step) and math.isnan(back.loss)


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "[1, 2]",
        '{"type": "step", "seq": "x"}',
        '{"type": "step", "seq": 1, "t": "now"}',
        '{"type": "layer_stats", "seq": 1, "layers": [{"grad_norm": 1.0}]}',
        b'{"type": "step", "seq": 1, "loss": "\xff"}',
    ],
)
def test_malformed_lines_raise_value_error(line: str | bytes) -> None:
    with pytest.raises(ValueError):
        decode_event(line)


def test_command_request_round_trip_and_validation() -> None:
    req = CommandRequest("set_lr", {"factor": 0.5})
    back = CommandRequest.decode(req.encode())
    assert back == req
    with pytest.raises(CommandError, match="unknown command"):
        CommandRequest("explode").validate()
    with pytest.raises(CommandError, match="set_lr"):
        CommandRequest("set_lr", {"factor": -1}).validate()
    with pytest.raises(CommandError, match="not valid JSON"):
        CommandRequest.decode("{nope")
    ack = CommandAck("id1", accepted=True, reason="ok", step=5)
    assert CommandAck.decode(ack.encode()) == ack
    with pytest.raises(ValueError):
        CommandAck.decode("[]")


def test_sample_probabilities_read_as_percentages() -> None:
    from growcockpit.protocol.samples_event import percent

    assert [percent(p) for p in (0.42, 0.1, 0.03, 0.004, 0.0004)] == [
        "42%",
        "10%",
        "3.0%",
        "0.4%",
        "<0.1%",
    ]
