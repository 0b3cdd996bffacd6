"""The dashboard's view as a `DashboardView` (growcockpit.session.view_memory) and back:
which tab is active, the loss plot's smoothing, the plots' x axis, the plot beside the
loss. The screen remembers it per run when a view key changes it and restores it when
the run's dashboard opens again."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from growcockpit.session.view_memory import DashboardView
from growcockpit.ui.widgets.loss_plot import LossPlot, axis_plots
from growcockpit.ui.widgets.scalar_plot import ScalarPlot


def current_view(screen: Screen[Any]) -> DashboardView:
    loss = screen.query_one(LossPlot)
    tab = screen.query_one(TabbedContent).active or DashboardView.tab
    return DashboardView(tab, loss.factor, loss.raw, loss.axis, screen.query_one(ScalarPlot).scalar)


def apply_view(screen: Screen[Any], view: DashboardView) -> None:
    """Show `view`; a tab this dashboard does not have is left as it is."""
    loss = screen.query_one(LossPlot)
    loss.raw, loss.factor = view.raw, view.factor
    for plot in axis_plots(screen):
        plot.axis = view.axis
    screen.query_one(ScalarPlot).scalar = view.scalar
    tabs = screen.query_one(TabbedContent)
    if any(pane.id == view.tab for pane in tabs.query(TabPane)):
        tabs.active = view.tab
