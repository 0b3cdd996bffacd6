"""The package version, in a room of its own.

`growcockpit/__init__.py` hands out the tracking API lazily, so it is a module with
behaviour; the backend records the version in every `run_started` event and must not
import that module (an arrow up the layers). Both read it from here.
"""

__version__ = "0.1.0"
