"""The host next to the run (nvitop's view): per-core CPU, load average, oversubscription."""

from __future__ import annotations

import os

import psutil
import pytest
from rich.text import Text

from growcockpit.metrics.system import SystemSampler
from growcockpit.protocol.events import System, WarningEvent
from growcockpit.protocol.machine_load import oversubscribed
from growcockpit.session.fold.metrics import on_system
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.system_panel import machine_text


@pytest.mark.parametrize(
    ("load", "cores", "busy"),
    [(2.5, 2, False), (3.0, 2, False), (3.1, 2, True), (20.0, 16, False), (24.5, 16, True)],
)
def test_oversubscribed_is_load_above_cores_plus_a_margin(
    load: float, cores: int, busy: bool
) -> None:
    assert oversubscribed(load, cores) is busy
    assert not oversubscribed(None, 2) and not oversubscribed(9.0, 0)


def test_a_sample_carries_the_host_and_the_warning_fires_once_per_episode() -> None:
    sampler = SystemSampler(lambda ev: None, 1.0)
    sample = sampler.sample()
    assert sample.cores == psutil.cpu_count()
    assert len(sample.core_pct) == sample.cores
    assert sample.machine_cpu_pct is not None and 0.0 <= sample.machine_cpu_pct <= 100.0
    assert sample.load_avg == pytest.approx(list(os.getloadavg()), abs=1.0)
    busy = System(load_avg=[9.0, 5.0, 2.0], cores=2)
    calm = System(load_avg=[1.0, 1.0, 1.0], cores=2)
    first = sampler.load_notice(busy)
    assert isinstance(first, WarningEvent) and "load 9.0 on 2 cores" in first.message
    assert sampler.load_notice(busy) is None  # said once
    assert sampler.load_notice(calm) is None
    assert isinstance(sampler.load_notice(busy), WarningEvent)  # a new episode


class _Widget:
    """What `colour` asks of a widget: a theme's variables."""

    app = None

    def get_component_rich_style(self, *_: object) -> None:  # pragma: no cover - unused
        return None


def test_the_panel_labels_run_and_host_and_flags_oversubscription() -> None:
    state = RunState()
    on_system(
        state,
        System(
            cpu_pct=190.0,
            machine_cpu_pct=97.0,
            core_pct=[95.0, 99.0],
            load_avg=[7.2, 6.0, 5.1],
            cores=2,
        ),
    )
    assert state.cores == 2 and state.load_avg[0] == 7.2
    text = Text()
    machine_text(state, _Widget(), text, compact=False)  # type: ignore[arg-type]
    line = text.plain
    assert "host 97% of 2 cores" in line and "load 7.2 6.0 5.1" in line
    assert "oversubscribed" in line
    calm = RunState()
    on_system(calm, System(machine_cpu_pct=40.0, core_pct=[40.0, 40.0], load_avg=[1.0], cores=2))
    text = Text()
    machine_text(calm, _Widget(), text, compact=False)  # type: ignore[arg-type]
    assert "oversubscribed" not in text.plain
    old = RunState()
    on_system(old, System(cpu_pct=50.0))  # a log from before the host was sampled
    text = Text()
    machine_text(old, _Widget(), text, compact=False)  # type: ignore[arg-type]
    assert text.plain == ""
