"""The dashboard's view settings remembered per run: the tab, the loss smoothing (TWEMA
factor or raw), the x axis and the plot beside the loss. Re-opening or re-attaching
to a run shows it as it was left, as a W&B workspace does.

Where: `$XDG_STATE_HOME/growcockpit/views/` (default `~/.local/state/...`), one small
JSON file per run named by a hash of the run directory's resolved path. Not in the
run directory: a run may be read-only, shared with others, or copied elsewhere, and
how one person looks at it is not part of the run. Not in settings.json: that file
is capped small and holds choices that apply everywhere, while hundreds of runs
would each add an entry. State, not configuration, in the XDG sense: losing it
costs nothing but a few key presses.

Plain JSON written atomically; a missing, broken or odd file (a FIFO, a huge one)
means the defaults, never an error or a hang. Nothing here knows Textual.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, get_args

from growcockpit.session.fold.axes import Axis
from growcockpit.session.scalar_view import BY_KEY, ScalarKey
from growcockpit.session.settings import read_regular, write_json
from growcockpit.session.smoothing import DEFAULT_FACTOR

MAX_VIEW_BYTES = 4 << 10
_TAB = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@dataclass(frozen=True)
class DashboardView:
    """What the dashboard's view keys set (1-6 tabs, < > r smoothing, x axis, v plot)."""

    tab: str = "overview"
    factor: float = DEFAULT_FACTOR
    raw: bool = False
    axis: Axis = "step"
    scalar: ScalarKey | None = None


def views_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "growcockpit" / "views"


def view_path(run_dir: Path, base: Path | None = None) -> Path:
    key = hashlib.sha256(str(Path(run_dir).resolve()).encode("utf-8", "surrogateescape"))
    return (views_dir() if base is None else base) / f"{key.hexdigest()[:32]}.json"


def _checked(data: dict[str, Any]) -> DashboardView:
    """Each field that reads as a valid value; the others stay at their defaults."""
    view: dict[str, Any] = {}
    tab = data.get("tab")
    if isinstance(tab, str) and _TAB.fullmatch(tab):
        view["tab"] = tab
    factor = data.get("factor")
    if isinstance(factor, int | float) and not isinstance(factor, bool) and 0 <= factor < 1:
        view["factor"] = float(factor)
    if isinstance(data.get("raw"), bool):
        view["raw"] = data["raw"]
    if data.get("axis") in get_args(Axis):
        view["axis"] = data["axis"]
    if data.get("scalar") is None or data.get("scalar") in BY_KEY:
        view["scalar"] = data.get("scalar")
    return DashboardView(**{**asdict(DashboardView()), **view})


def load_view(run_dir: Path, base: Path | None = None) -> DashboardView | None:
    """The view last left on `run_dir`; None when none was remembered (or it is unreadable)."""
    try:
        data = json.loads(read_regular(view_path(run_dir, base), MAX_VIEW_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return _checked(data) if isinstance(data, dict) else None


def save_view(run_dir: Path, view: DashboardView, base: Path | None = None) -> bool:
    """Remember `view` for `run_dir`; False (no exception) when it cannot be written."""
    data = {"run": str(Path(run_dir).resolve()), **asdict(view)}
    return write_json(view_path(run_dir, base), data)


class RunViewMemory:
    """One run's remembered view: read once when its dashboard opens, written when a
    view key changed it (not on every open: a dashboard only looked at writes nothing)."""

    def __init__(self, run_dir: Path, base: Path | None = None) -> None:
        self.run_dir, self._base = Path(run_dir), base
        self.last: DashboardView | None = None

    def load(self) -> DashboardView | None:
        self.last = load_view(self.run_dir, self._base)
        return self.last

    def take(self, view: DashboardView) -> bool:
        """Whether `view` is new (differs from the one loaded or taken last; a run with
        none remembered has the default view): if so it becomes the one to save."""
        if view == (self.last or DashboardView()):
            return False
        self.last = view
        return True

    def save(self, view: DashboardView) -> bool:
        return save_view(self.run_dir, view, self._base)
