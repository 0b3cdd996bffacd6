"""growcockpit: design, run and steer growing-transformer training schedules.

`growcockpit.track(...)` and the Trainer / Lightning callbacks load torch on first use
(growcockpit/tracking/), so `import growcockpit` stays light for the cockpit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from growcockpit._version import __version__

if TYPE_CHECKING:  # the names `__getattr__` hands out, for type checkers
    from growcockpit.tracking import CockpitCallback as CockpitCallback
    from growcockpit.tracking import CockpitLightningCallback as CockpitLightningCallback
    from growcockpit.tracking import GrowthCallback as GrowthCallback
    from growcockpit.tracking import GrowthError as GrowthError
    from growcockpit.tracking import Tracker as Tracker
    from growcockpit.tracking import TrackError as TrackError
    from growcockpit.tracking import track as track

_TRACKING = (
    "track",
    "Tracker",
    "TrackError",
    "CockpitCallback",
    "CockpitLightningCallback",
    "GrowthCallback",
    "GrowthError",
)


def __getattr__(name: str) -> Any:
    if name in _TRACKING:
        import growcockpit.tracking as tracking

        return getattr(tracking, name)
    raise AttributeError(f"module 'growcockpit' has no attribute {name!r}")


__all__ = [*_TRACKING, "__version__"]
