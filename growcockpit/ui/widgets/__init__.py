"""Widgets of the cockpit; each reads a plain `RunState` (or `Plan`) handed to it."""

from growcockpit.ui.widgets.event_log import EventLogPanel
from growcockpit.ui.widgets.layer_table import LayerTable
from growcockpit.ui.widgets.loss_plot import LossPlot
from growcockpit.ui.widgets.run_header import RunHeader
from growcockpit.ui.widgets.stage_table import StageTable

__all__ = ["EventLogPanel", "LayerTable", "LossPlot", "RunHeader", "StageTable"]
