"""Screens of the cockpit."""

from growcockpit.ui.screens.compare import CompareScreen
from growcockpit.ui.screens.confirm import ConfirmScreen
from growcockpit.ui.screens.dashboard import DashboardScreen
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.screens.home import HomeScreen
from growcockpit.ui.screens.launch import LaunchOptions, LaunchScreen
from growcockpit.ui.screens.prompt import HelpScreen, PromptScreen

__all__ = [
    "CompareScreen",
    "ConfirmScreen",
    "DashboardScreen",
    "DesignerScreen",
    "HelpScreen",
    "HomeScreen",
    "LaunchOptions",
    "LaunchScreen",
    "PromptScreen",
]
