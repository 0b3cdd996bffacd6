"""Widgets of the cockpit; each reads a plain `RunState` (or `Plan`) handed to it."""

from growcockpit.ui.widgets.event_log import EventLogPanel
from growcockpit.ui.widgets.heatmap import LayerHeatmap
from growcockpit.ui.widgets.layer_table import LayerTable
from growcockpit.ui.widgets.loss_plot import LossPlot
from growcockpit.ui.widgets.run_header import RunHeader
from growcockpit.ui.widgets.stage_table import StageTable
from growcockpit.ui.widgets.system_panel import SystemPanel
from growcockpit.ui.widgets.timing import ThroughputPlot, TimingPanel

__all__ = [
    "EventLogPanel",
    "LayerHeatmap",
    "LayerTable",
    "LossPlot",
    "RunHeader",
    "StageTable",
    "SystemPanel",
    "ThroughputPlot",
    "TimingPanel",
]
