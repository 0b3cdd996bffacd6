"""The GPU check's honest denominators: datasheet peaks looked up by device name (never
guessed), and activation bytes in the roofline (a frozen bottom moves fewer of them)."""

from __future__ import annotations

import sys

import pytest
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from gpu_activations import activation_bytes, block_elements_per_token  # noqa: E402
from gpu_configs import tiny_plan  # noqa: E402
from gpu_datasheet import datasheet_for, mfu  # noqa: E402

from growcockpit.plan import load_plan  # noqa: E402


@pytest.mark.parametrize(
    ("name", "sheet", "tflops"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM", 989.4),
        ("NVIDIA GH200 480GB", "NVIDIA GH200", 989.4),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 989.4),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756.0),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM 80GB", 312.0),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB", 312.0),
        ("NVIDIA L40S", "NVIDIA L40S", 362.0),
        ("NVIDIA L4", "NVIDIA L4", 121.0),
    ],
)
def test_known_gpus_get_their_datasheet_peak(name: str, sheet: str, tflops: float) -> None:
    found = datasheet_for(name)
    assert found is not None and (found.name, found.bf16_tflops) == (sheet, tflops)


def test_an_unknown_device_gets_no_datasheet_mfu() -> None:
    assert datasheet_for("Tesla T4") is None
    assert mfu(1e12, 10.0, None) is None
    assert mfu(989.4e12 * 0.010 * 0.35, 10.0, 989.4) == pytest.approx(0.35)


def test_activation_bytes_count_blocks_by_how_backward_reaches_them() -> None:
    plan = tiny_plan(load_plan(REPO / "sample_plans" / "mslt-bert-base.toml"))
    m = plan.model
    per_token = block_elements_per_token(plan, m.hidden_size)
    assert per_token == 8 * m.hidden_size + 2 * m.hidden_size + 2 * m.intermediate_size
    tokens = plan.data.seq_len * plan.optim.batch_size
    last = len(plan.stages) - 1  # all layers train: 4 accesses each
    logits = tokens * plan.data.mlm_probability * int(plan.data.tokenizer.split(":")[1])
    layers = plan.stages[last].layers
    expected = tokens * per_token * 4 * layers * 2 + logits * (2 * 2 + 8) + logits * 4
    assert activation_bytes(plan, last, 2) == pytest.approx(expected, rel=0.02)
    # stage 4 (grow: the top layers train, embeddings frozen): its frozen bottom runs under
    # no_grad and moves half the bytes per layer
    grow = next(i for i, s in enumerate(plan.stages) if not s.embeddings_trainable() and i > 0)
    full_at_that_depth = tokens * per_token * 4 * plan.stages[grow].layers * 2
    assert activation_bytes(plan, grow, 2) < full_at_that_depth + logits * 16
