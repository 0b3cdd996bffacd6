"""Watch, steer and grow training loops growcockpit does not run: a plain PyTorch loop
(`track`), a Hugging Face `Trainer` (`CockpitCallback`, `GrowthCallback`) and Lightning
(`CockpitLightningCallback`). Knows torch, transformers, protocol, metrics and grow;
never Textual or the cockpit. The integrations load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from growcockpit.tracking.run_files import TrackError
from growcockpit.tracking.tracker import Tracker, track

if TYPE_CHECKING:
    from growcockpit.tracking.hf import CockpitCallback
    from growcockpit.tracking.hf_growth import GrowthCallback, GrowthError
    from growcockpit.tracking.lightning import CockpitLightningCallback

_LAZY: dict[str, str] = {
    "CockpitCallback": "growcockpit.tracking.hf",
    "GrowthCallback": "growcockpit.tracking.hf_growth",
    "GrowthError": "growcockpit.tracking.hf_growth",
    "CockpitLightningCallback": "growcockpit.tracking.lightning",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'growcockpit.tracking' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "CockpitCallback",
    "CockpitLightningCallback",
    "GrowthCallback",
    "GrowthError",
    "TrackError",
    "Tracker",
    "track",
]
