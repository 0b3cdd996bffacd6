"""Measurements taken during training: per-layer stats and system utilisation."""

from growcockpit.metrics.layer_stats import LayerStatsSampler
from growcockpit.metrics.system import GpuProbe, SystemSampler

__all__ = ["GpuProbe", "LayerStatsSampler", "SystemSampler"]
