"""The cockpit application: a thin shell that registers themes, picks the first screen,
routes the screens' requests (open a plan, a run, compare, launch) and lists every
action in the command palette (ctrl+p)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from growcockpit.resources import themes_dir
from growcockpit.session.run_client import LaunchError, RunClient
from growcockpit.session.settings import load_settings, save_settings
from growcockpit.text.safe_text import quoted
from growcockpit.ui.screens import (
    CompareScreen,
    ConfirmScreen,
    DashboardScreen,
    DesignerScreen,
    HomeScreen,
    LaunchOptions,
)
from growcockpit.ui.screens.race import RaceScreen
from growcockpit.ui.themes import (
    DEFAULT_THEME,
    GC_DEFAULTS,
    LAYOUT_FILE,
    ThemeFileError,
    load_theme,
    theme_files,
)
from growcockpit.ui.type_ahead import TypeAhead
from growcockpit.ui.widgets.race_list import RaceList

Launcher = Callable[[Path, Path, LaunchOptions], Path]


def default_launcher(plan_path: Path, runs_root: Path, options: LaunchOptions) -> Path:
    return RunClient.launch(plan_path, runs_root, device=options.device, nproc=options.nproc)


REPLAY_WAIT_MAX_S = 1.0  # the longest a replayed key waits for the one before it
_REPLAYED = "_growcockpit_replayed"  # marks a key the type-ahead replays: never held again


class GrowCockpitApp(App[None]):
    """Home is always at the bottom of the screen stack; `plan_path` opens the designer
    on that plan, `run_dir` the dashboard of that run, on top of it.

    `theme` overrides the remembered one (settings.json); `clock` gives "now" for
    elapsed times and ages (finished runs use event timestamps only); `launcher`
    starts a backend and returns its run directory.
    """

    TITLE = "growcockpit"
    CSS_PATH = str(themes_dir() / LAYOUT_FILE)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [Binding("t", "cycle_theme", "Theme", show=False)]

    def __init__(
        self,
        plan_path: Path | None = None,
        run_dir: Path | None = None,
        runs_root: Path = Path("runs"),
        *,
        theme: str | None = None,
        clock: Callable[[], float] = time.time,
        launcher: Launcher | None = None,
        command_timeout: float = 60.0,
        workdir: Path | None = None,
        new_plan: bool = False,
        samples: Path | None = None,
    ) -> None:
        super().__init__()
        self.plan_path = Path(plan_path) if plan_path is not None else None
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.runs_root = Path(runs_root)
        self.clock = clock
        self.launcher: Launcher = launcher or default_launcher
        self.command_timeout = command_timeout
        self.workdir = workdir
        self.new_plan = new_plan
        self.samples = samples  # where sample plans are listed from (tests pin it)
        self.theme_names: list[str] = []
        for file in theme_files():
            try:
                self.register_theme(load_theme(file))
            except ThemeFileError:
                continue
            self.theme_names.append(file.name)
        if theme is not None and theme not in self.theme_names:
            raise ValueError(
                f"unknown theme {quoted(theme)}; expected one of {', '.join(self.theme_names)}"
            )
        remembered = load_settings().get("theme")
        choice = theme or (remembered if remembered in self.theme_names else DEFAULT_THEME)
        self._remember_theme = theme is None
        self.theme = f"growcockpit-{choice}"
        self.type_ahead: TypeAhead[events.Key] = TypeAhead()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(GC_DEFAULTS)

    @property
    def theme_choice(self) -> str:
        return self.theme.removeprefix("growcockpit-")

    def on_mount(self) -> None:
        # every screen change holds the keys pressed until the new top screen is up
        self.screen_change_signal.subscribe(self, lambda _screen: self._hold(None))
        self.push_screen(HomeScreen(self.runs_root, self.workdir, self.samples))
        if self.run_dir is not None:
            self.push_screen(self._dashboard(self.run_dir))
        elif self.plan_path is not None or self.new_plan:
            self.push_screen(DesignerScreen(self.plan_path, runs_root=self.runs_root))

    def _dashboard(
        self, run_dir: Path, plan_path: Path | None = None, back: bool = False
    ) -> DashboardScreen:
        return DashboardScreen(
            run_dir,
            clock=self.clock,
            command_timeout=self.command_timeout,
            plan_path=plan_path,
            back=back,
        )

    # ---- routing ----------------------------------------------------------------
    def on_home_screen_open_plan(self, message: HomeScreen.OpenPlan) -> None:
        self.push_screen(DesignerScreen(message.path, runs_root=self.runs_root, draft=message.plan))

    def on_home_screen_open_run(self, message: HomeScreen.OpenRun) -> None:
        self.run_dir = message.path
        self.push_screen(self._dashboard(message.path, back=True))

    def on_home_screen_open_compare(self, message: HomeScreen.OpenCompare) -> None:
        self.push_screen(CompareScreen(self.runs_root, message.paths))

    def on_race_list_open_race(self, message: RaceList.OpenRace) -> None:
        self.push_screen(RaceScreen(message.path))

    def on_designer_screen_launch_requested(self, message: DesignerScreen.LaunchRequested) -> None:
        try:
            run_dir = self.launcher(message.plan_path, self.runs_root, message.options)
        except (LaunchError, OSError) as exc:
            self.notify(f"launch failed: {exc}", title="Launch failed", severity="error")
            return
        self.run_dir = run_dir
        self.notify(f"launched: {run_dir.name}", title="Run started")
        self.switch_screen(self._dashboard(run_dir, message.plan_path))

    def action_home(self) -> None:
        """Back to the home screen (runs keep going)."""
        while len(self.screen_stack) > 2 and not isinstance(self.screen, HomeScreen):
            self.pop_screen()
        if not isinstance(self.screen, HomeScreen):
            self.pop_screen()

    def action_open_compare(self) -> None:
        self.push_screen(CompareScreen(self.runs_root, [self.run_dir] if self.run_dir else []))

    def action_new_plan(self) -> None:
        self.push_screen(DesignerScreen(None, runs_root=self.runs_root))

    # ---- type-ahead: keys pressed while a screen opens go to it (ui/type_ahead.py) -----
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and self._may_hold(event):
            if not self.type_ahead.holding and (not self.screen.is_mounted or self._busy()):
                self._hold(None)  # pushed, not mounted yet, or the key before is not handled
            if self.type_ahead.offer(event):
                return
        await super().on_event(event)

    def on_key(self, event: events.Key) -> None:
        """A key that no widget took bubbles up here for the screen's bindings (Textual's
        App._on_key, which runs after this unless prevented): one that was forwarded to the
        old screen before a new one was asked for is held for the new one. A key that was
        handed on before a hold for keys typed too fast began is not: its turn came."""
        if not self._may_hold(event):
            return
        if self.type_ahead.origin is None and self.screen.is_mounted:
            return
        if not self.type_ahead.holding:
            self._hold(None)
        if self.type_ahead.offer(event):
            event.prevent_default()

    def _may_hold(self, event: events.Key) -> bool:
        """Not a key being replayed, and not an answer to a question already on screen."""
        if getattr(event, _REPLAYED, False):
            return False
        return not (isinstance(self.screen, ConfirmScreen) and self.screen.is_mounted)

    def hold_keys(self) -> None:
        """Hold the keys pressed from now until the next screen is mounted, then replay them."""
        self._hold(self.screen)

    def _hold(self, origin: object | None) -> None:
        watching = self.type_ahead.holding
        self.type_ahead.hold(origin, time.monotonic())
        if not watching:
            self._watch_type_ahead()

    def _watch_type_ahead(self) -> None:
        top = self.screen
        if self.type_ahead.ready(top, top.is_mounted, time.monotonic()):
            self.run_worker(self._replay_keys(), group="type-ahead", exit_on_error=False)
        else:
            self.set_timer(0.02, self._watch_type_ahead)

    async def _replay_keys(self) -> None:
        """Replay the held keys in order, one per turn: each waits until the app is idle
        after the one before (and the new screen's on_mount has moved the focus), as a
        person's next key would. A confirmation dialog on top drops what is left: a
        question is answered by a key pressed after it was seen, never ahead of it."""
        while True:
            await self._handled()
            top = self.screen
            if not self.type_ahead.ready(top, top.is_mounted, time.monotonic()):
                continue  # a replayed key is opening a screen: its keys wait for it
            if isinstance(top, ConfirmScreen):
                self.type_ahead.release()
                return
            key = self.type_ahead.take()
            if key is None:
                return
            replay = events.Key(key.key, key.character)
            setattr(replay, _REPLAYED, True)
            self.post_message(replay)

    def _busy(self) -> bool:
        """A message is still queued in the app or its screen: a key arriving now (a burst
        on a loaded machine, read in one go) would be forwarded to the focus as it is now,
        before the key ahead of it (a Tab) has moved it, so it waits its turn."""
        screen = self.screen
        return any(p.message_queue_size for p in (self, screen, *screen.walk_children()))

    async def _handled(self) -> None:
        """Until every message queue of the app and its screen is empty on two looks in a
        row (the key before has been handled, bubbled and bound), or REPLAY_WAIT_MAX_S."""
        deadline = time.monotonic() + REPLAY_WAIT_MAX_S
        quiet = 0
        while quiet < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            quiet = 0 if self._busy() else quiet + 1

    # ---- themes -------------------------------------------------------------------
    def action_cycle_theme(self) -> None:
        names = self.theme_names
        i = names.index(self.theme_choice) if self.theme_choice in names else -1
        self.set_theme(names[(i + 1) % len(names)])

    def set_theme(self, name: str) -> None:
        self.theme = f"growcockpit-{name}"
        if self._remember_theme:
            save_settings({"theme": name})
        self.notify(f"theme: {name}", timeout=2)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast is literal text: they show plan problems, paths, run names and
        backend answers, whose brackets ("add [model] with …") Rich markup would eat.
        `Widget.notify` passes markup=True on; no toast here uses markup, so it is ignored."""
        del markup
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    # ---- the command palette lists every action ------------------------------
    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The screen's keys, the themes, then the app's own commands and Textual's, each
        once: Home's `c` Compare and the app's "Compare runs" (and two "New plan"s, two
        "Quit"s) were listed side by side for one action."""
        seen: set[str] = set()  # titles, case-folded
        bound: set[str] = set()  # the screen's actions
        for binding in getattr(screen, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.description:
                key = binding.key_display or binding.key.split(",")[0]
                seen.add(binding.description.casefold())
                bound.add(binding.action.removeprefix("app."))
                yield SystemCommand(
                    binding.description,
                    f"key {key} · {type(screen).__name__.removesuffix('Screen').lower()}",
                    partial(screen.run_action, binding.action),
                )
        for name in self.theme_names:
            yield SystemCommand(
                f"Theme: {name}",
                f"switch to the {name} theme (t cycles)",
                partial(self.set_theme, name),
            )
        own = (
            ("Home", "plans and runs", self.action_home, {"home"}),
            ("New plan", "open the designer on a new plan", self.action_new_plan, {"new_plan"}),
            (
                "Compare runs",
                "overlay the loss curves of runs",
                self.action_open_compare,
                {"compare", "open_compare"},
            ),
        )
        for title, about, callback, actions in own:
            if title.casefold() not in seen and not bound & actions:
                seen.add(title.casefold())
                yield SystemCommand(title, about, callback)
        for command in super().get_system_commands(screen):
            if command.title != "Theme" and command.title.casefold() not in seen:
                seen.add(command.title.casefold())
                yield command
