"""Datasheet peaks of known GPUs: the denominator of an MFU a GPU engineer will accept.

MFU against a peak measured on the spot (a large matmul loop) reads higher than
against the vendor's figure, because no loop reaches the datasheet; the GPU check
reports both, side by side and labelled, the datasheet's first. Figures are dense
(no sparsity) bf16 tensor-core TFLOP/s and HBM bandwidth from the vendors' data
sheets; a device not in the table gets no datasheet MFU (n/a), never a guess.
Names are matched against `torch.cuda.get_device_name`, most specific first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    name: str
    bf16_tflops: float  # dense
    hbm_gbps: float


# most specific match first: "H100 PCIe" before "H100"
DATASHEETS: tuple[tuple[str, Datasheet], ...] = (
    ("GH200", Datasheet("NVIDIA GH200", 989.4, 4000.0)),
    ("H200", Datasheet("NVIDIA H200 SXM", 989.4, 4800.0)),
    ("H100 NVL", Datasheet("NVIDIA H100 NVL", 835.0, 3900.0)),
    ("H100 PCIe", Datasheet("NVIDIA H100 PCIe", 756.0, 2000.0)),
    ("H100", Datasheet("NVIDIA H100 SXM", 989.4, 3350.0)),
    ("A100-SXM4-80GB", Datasheet("NVIDIA A100 SXM 80GB", 312.0, 2039.0)),
    ("A100 80GB PCIe", Datasheet("NVIDIA A100 PCIe 80GB", 312.0, 1935.0)),
    ("A100", Datasheet("NVIDIA A100 40GB", 312.0, 1555.0)),
    ("L40S", Datasheet("NVIDIA L40S", 362.0, 864.0)),
    ("L40", Datasheet("NVIDIA L40", 181.0, 864.0)),
    ("A10", Datasheet("NVIDIA A10", 125.0, 600.0)),
    ("L4", Datasheet("NVIDIA L4", 121.0, 300.0)),
)


def datasheet_for(device_name: str) -> Datasheet | None:
    """The table's entry for a device name (`torch.cuda.get_device_name`), or None."""
    for key, sheet in DATASHEETS:
        if key.lower() in device_name.lower():
            return sheet
    return None


def mfu(flops_per_step: float, step_ms: float, peak_tflops: float | None) -> float | None:
    """Model FLOPs utilisation: achieved FLOP/s over `peak_tflops` (None without a peak)."""
    if peak_tflops is None or step_ms <= 0:
        return None
    return flops_per_step / (step_ms / 1e3) / (peak_tflops * 1e12)
