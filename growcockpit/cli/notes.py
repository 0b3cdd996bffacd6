"""`growcockpit note RUN [TEXT]` and `growcockpit tag RUN [TAGS]`: annotate a run.

The note and tags live in the run directory (`notes.json`, see
`protocol.run_notes`), so Home, the dashboard header and every copy of the
run show them. Without a value each command prints what is set; with one it
replaces it ("" clears). Standard library and `protocol` only: instant over SSH.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from growcockpit.cli.common import EXIT_OK, Subparsers, UserError

if TYPE_CHECKING:
    from growcockpit.protocol.run_notes import RunNotes


def add_parsers(sub: Subparsers) -> None:
    n = sub.add_parser("note", help='show or set a run\'s one-line note ("" clears it)')
    n.add_argument("run_dir", type=Path)
    n.add_argument("text", nargs="?", help="the note (one line); omit it to print the note")
    n.set_defaults(func=cmd_note)

    t = sub.add_parser("tag", help="show or set a run's tags, e.g. `tag RUN best,lr-sweep`")
    t.add_argument("run_dir", type=Path)
    t.add_argument(
        "tags", nargs="?", help='comma-separated tags, replacing the run\'s ("" clears them)'
    )
    t.set_defaults(func=cmd_tag)


def _run_dir(path: Path) -> Path:
    from growcockpit.protocol.rundir import RunPaths

    paths = RunPaths(path)
    if not path.is_dir():
        raise UserError(f"{path}: no such run directory; pass a directory under runs/")
    if not (paths.events.exists() or paths.status.exists() or paths.plan.exists()):
        raise UserError(f"{path}: not a growcockpit run directory (no events.jsonl or status.json)")
    return path


def notes_to_update(run: Path, setting: bool) -> RunNotes:
    """The run's notes; when `setting`, a corrupt notes.json is moved aside (said on
    stderr) and the note or tags start afresh, instead of failing as before."""
    from growcockpit.protocol.run_notes import keep_corrupt_aside, read_notes

    aside = keep_corrupt_aside(run) if setting else None
    if aside is not None:
        print(
            f"growcockpit: {run / 'notes.json'}: not a notes file growcockpit wrote; "
            f"moved aside to {aside.name}",
            file=sys.stderr,
        )
    return read_notes(run)


def cmd_note(args: argparse.Namespace) -> int:
    from growcockpit.protocol.run_notes import note_problem, write_notes
    from growcockpit.text.safe_text import terminal_safe

    run = _run_dir(args.run_dir)
    notes = notes_to_update(run, args.text is not None)
    if args.text is None:
        print(terminal_safe(notes.note) if notes.note else "(no note)")
        return EXIT_OK
    text = args.text.strip()
    problem = note_problem(text)
    if problem:
        raise UserError(f"note: {problem}")
    write_notes(run, replace(notes, note=text))
    print(f"{run.name}: note {'set' if text else 'cleared'}")
    return EXIT_OK


def cmd_tag(args: argparse.Namespace) -> int:
    from growcockpit.protocol.run_notes import parse_tags, write_notes

    run = _run_dir(args.run_dir)
    notes = notes_to_update(run, args.tags is not None)
    if args.tags is None:
        print(", ".join(notes.tags) if notes.tags else "(no tags)")
        return EXIT_OK
    try:
        tags = parse_tags(args.tags)
    except ValueError as exc:
        raise UserError(f"tag: {exc}; e.g. `growcockpit tag RUN best,lr-sweep`") from None
    write_notes(run, replace(notes, tags=tags))
    print(f"{run.name}: tags {', '.join(tags) if tags else 'cleared'}")
    return EXIT_OK
