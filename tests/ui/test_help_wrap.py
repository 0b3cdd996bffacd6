"""The `?` help wraps its text once, at its own width, and keeps each key's description
in its column, at 80x24 and 160x48 alike: a second wrap left lines cut short."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import write_recorded_run

from growcockpit.ui import GrowCockpitApp

SIZE = (160, 48)


def _help_lines(app: GrowCockpitApp, widget_id: str) -> tuple[int, list[str]]:
    from textual.geometry import Region

    widget = app.screen.query_one(f"#{widget_id}")
    width, height = widget.size
    strips = widget.render_lines(Region(0, 0, width, height))
    return width, [strip.text.rstrip() for strip in strips]


def _orphans(width: int, lines: list[str]) -> list[str]:
    """Lines ended early: the next line's first word would have fitted (a second wrap)."""
    bad = []
    for line, after in zip(lines, lines[1:], strict=False):
        if not line or not after or after.startswith(" "):
            continue  # a paragraph's last line, or a list item / hanging indent
        if len(line) + 1 + len(after.split()[0]) <= width:
            bad.append(f"{line!r} / {after!r}")
    return bad


async def test_help_overlays_wrap_once(tmp_path: Path) -> None:
    from growcockpit.resources import sample_plan
    from growcockpit.ui.screens import HelpScreen

    write_recorded_run(tmp_path / "runs" / "r")
    cases = [
        (GrowCockpitApp(run_dir=tmp_path / "runs" / "r"), (80, 24)),
        (GrowCockpitApp(run_dir=tmp_path / "runs" / "r"), SIZE),
        (GrowCockpitApp(plan_path=sample_plan("cpu-demo")), (80, 24)),
        (GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path), SIZE),
    ]
    for app, size in cases:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            width, intro = _help_lines(app, "help-intro")
            assert _orphans(width, intro) == [], (size, type(app.screen_stack[-2]).__name__)
            _, keys = _help_lines(app, "help-keys")
            names = {key for key, _ in app.screen._keys}
            for line in keys:  # a wrapped description stays in its column, under itself
                assert not line or line.startswith(" ") or line.split()[0] in names, line
