"""The cockpit (Textual). Talks to runs only through run directories and control sockets.

Never imports torch, transformers, datasets or the backend: a cockpit over SSH
must start in a fraction of a second and never hold training state. What is
not drawing (`RunSession`, `RunState`, the folds, the catalog) lives in
`growcockpit.session`, which imports no Textual, so scripts and tests can use it
headless. Every name here is loaded only when asked for.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from growcockpit.session.run_client import RunClient
    from growcockpit.session.run_session import RunSession
    from growcockpit.session.run_state import RunState
    from growcockpit.ui.app import GrowCockpitApp

__all__ = ["GrowCockpitApp", "RunClient", "RunSession", "RunState"]

_HOMES = {
    "GrowCockpitApp": "growcockpit.ui.app",
    "RunClient": "growcockpit.session.run_client",
    "RunState": "growcockpit.session.run_state",
    "RunSession": "growcockpit.session.run_session",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
