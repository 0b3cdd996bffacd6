"""The cockpit application: a thin shell that picks the first screen and launches runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App

from growcockpit.resources import sample_plan, themes_dir
from growcockpit.ui.run_client import LaunchError, RunClient
from growcockpit.ui.screens import DashboardScreen, PlanScreen

THEMES = {"dark": "textual-dark", "light": "textual-light"}

Launcher = Callable[[Path, Path], Path]


class GrowCockpitApp(App[None]):
    """`plan_path`: show that plan, ready to launch; `run_dir`: attach to a run.

    With neither, the plan screen opens on the shipped `cpu-demo` plan. `clock`
    gives "now" for the elapsed time of live runs (finished runs use event
    timestamps only); `launcher` starts a backend and returns its run directory.
    """

    TITLE = "growcockpit"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]

    def __init__(
        self,
        plan_path: Path | None = None,
        run_dir: Path | None = None,
        runs_root: Path = Path("runs"),
        *,
        theme: str = "dark",
        clock: Callable[[], float] = time.time,
        launcher: Launcher | None = None,
        command_timeout: float = 60.0,
    ) -> None:
        if theme not in THEMES:
            raise ValueError(f"unknown theme {theme!r}; expected one of {', '.join(THEMES)}")
        super().__init__(css_path=[themes_dir() / f"{theme}.tcss"])
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.runs_root = Path(runs_root)
        self._theme_choice = theme
        self.clock = clock
        self.launcher: Launcher = launcher or RunClient.launch
        self.command_timeout = command_timeout

    def on_mount(self) -> None:
        self.theme = THEMES[self._theme_choice]
        if self.run_dir is not None:
            self.push_screen(self._dashboard(self.run_dir))
        else:
            self.push_screen(PlanScreen(self.plan_path or sample_plan("cpu-demo")))

    def _dashboard(self, run_dir: Path, plan_path: Path | None = None) -> DashboardScreen:
        return DashboardScreen(
            run_dir, clock=self.clock, command_timeout=self.command_timeout, plan_path=plan_path
        )

    def on_plan_screen_launch_requested(self, message: PlanScreen.LaunchRequested) -> None:
        try:
            run_dir = self.launcher(message.plan_path, self.runs_root)
        except (LaunchError, OSError) as exc:
            self.notify(f"launch failed: {exc}", title="Launch failed", severity="error")
            return
        self.run_dir = run_dir
        self.notify(f"launched: {run_dir}", title="Run started")
        self.switch_screen(self._dashboard(run_dir, message.plan_path))
