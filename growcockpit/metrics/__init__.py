"""Measurements taken during training: per-layer stats and timing, system utilisation."""

from growcockpit.metrics.layer_stats import LayerStatsSampler
from growcockpit.metrics.system import GpuProbe, SystemSampler
from growcockpit.metrics.timing import LayerTimer

__all__ = ["GpuProbe", "LayerStatsSampler", "LayerTimer", "SystemSampler"]
