"""The cockpit (Textual). Talks to runs only through run directories and control sockets.

Never imports torch, transformers, datasets or the backend: a cockpit over SSH
must start in a fraction of a second and never hold training state. What is
not drawing (`RunSession`, `RunState`, the folds, the catalog) does not import
Textual either, so scripts and tests can use it headless. Every name here is
loaded only when asked for: `growcockpit train` imports `ui.index_keeper` and
must not pay for the folds at start-up.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from growcockpit.ui.app import GrowCockpitApp
    from growcockpit.ui.run_client import RunClient
    from growcockpit.ui.run_state import RunState
    from growcockpit.ui.session import RunSession

__all__ = ["GrowCockpitApp", "RunClient", "RunSession", "RunState"]

_HOMES = {
    "GrowCockpitApp": "growcockpit.ui.app",
    "RunClient": "growcockpit.ui.run_client",
    "RunState": "growcockpit.ui.run_state",
    "RunSession": "growcockpit.ui.session",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
