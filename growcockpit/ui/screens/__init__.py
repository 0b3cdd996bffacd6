"""Screens of the cockpit."""

from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.dashboard import DashboardScreen
from growcockpit.ui.screens.plan_screen import PlanScreen

__all__ = ["ConfirmScreen", "DashboardScreen", "PlanScreen"]
