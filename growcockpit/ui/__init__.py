"""The cockpit (Textual). Talks to runs only through run directories and control sockets.

Never imports torch, transformers, datasets or the backend: a cockpit over SSH
must start in a fraction of a second and never hold training state. What is
not drawing (`RunSession`, `RunState`, the folds, the catalog) does not import
Textual either, so scripts and tests can use it headless; the app is loaded
only when asked for.
"""

from typing import TYPE_CHECKING, Any

from growcockpit.ui.run_client import RunClient
from growcockpit.ui.run_state import RunState
from growcockpit.ui.session import RunSession

if TYPE_CHECKING:
    from growcockpit.ui.app import GrowCockpitApp

__all__ = ["GrowCockpitApp", "RunClient", "RunSession", "RunState"]


def __getattr__(name: str) -> Any:
    if name == "GrowCockpitApp":
        from growcockpit.ui.app import GrowCockpitApp

        return GrowCockpitApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
