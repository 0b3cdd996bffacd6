"""The system panel charges this process's GPU memory to the GPU it is really on."""

from __future__ import annotations

from growcockpit.metrics.system import match_pci


def test_nvml_indices_map_to_torch_ordinals_by_pci_address() -> None:
    # 3 GPUs; CUDA_VISIBLE_DEVICES=2,0 → torch ordinal 0 is NVML's GPU 2, ordinal 1 is GPU 0
    nvml = ["00000000:18:00.0", "00000000:3B:00.0", "00000000:86:00.0"]
    torch_pci = [(0, 0x86, 0), (0, 0x18, 0)]
    assert match_pci(nvml, torch_pci) == {2: 0, 0: 1}
    assert match_pci([None, "garbage"], torch_pci) == {}
