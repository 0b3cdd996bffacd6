"""The soak's cockpit: the real Textual app, headless, attached to one run until told to stop.

    python bench/soak_cockpit.py RUN_DIR STOP_FILE

`bench/soak.py` starts this as its own process so the cockpit's RSS, threads and fds are
measured apart from the soak's own viewers and commander. It attaches the way
`growcockpit attach RUN_DIR` does (the dashboard, tailing events.jsonl, redrawing at its
own rates) through Textual's test driver, and stays attached until STOP_FILE exists.
Then it prints one JSON line: the step the dashboard shows and the events it read, so the
soak can check the cockpit kept up with the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from growcockpit.ui import GrowCockpitApp  # noqa: E402
from growcockpit.ui.screens import DashboardScreen  # noqa: E402

READY = "cockpit: attached"


async def attached(run_dir: Path, stop_file: Path) -> dict[str, object]:
    app = GrowCockpitApp(run_dir=run_dir, runs_root=run_dir.parent, theme="dark")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        if not isinstance(screen, DashboardScreen):
            raise SystemExit(f"soak cockpit: expected the dashboard, got {type(screen).__name__}")
        print(READY, flush=True)
        while not stop_file.exists():
            await pilot.pause(0.5)
        # the run has stopped: let the dashboard read the last lines and draw them
        for _ in range(40):
            await pilot.pause(0.25)
            if screen.session.caught_up:
                break
        screen.flush_text()
        return {
            "cockpit_step": screen.session.state.step,
            "cockpit_events": screen.session.events_read,
        }


def main() -> int:
    run_dir, stop_file = Path(sys.argv[1]), Path(sys.argv[2])
    print(json.dumps(asyncio.run(attached(run_dir, stop_file))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
