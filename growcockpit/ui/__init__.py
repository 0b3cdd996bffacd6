"""The cockpit (Textual). Talks to runs only through run directories and control sockets.

Never imports torch, transformers, datasets or the backend: a cockpit over SSH
must start in a fraction of a second and never hold training state.
"""

from growcockpit.ui.app import GrowCockpitApp
from growcockpit.ui.run_client import RunClient
from growcockpit.ui.run_state import RunState

__all__ = ["GrowCockpitApp", "RunClient", "RunState"]
