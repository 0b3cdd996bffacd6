"""The user's note and tags for a run, kept in the run directory (`notes.json`).

They travel with the run (copied, shared, archived) like everything else about
it, and any cockpit or the CLI may set them: the file is small and replaced
atomically (`safe_fs.write_atomic`), so a reader sees the old or the new
annotation, never half of one. The backend never touches it. A run directory
may come from someone else, so reading is capped in size, refuses links and
special files, and checks every value; a bad file is reported, not trusted.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from growcockpit.text.safe_text import quoted

from .rundir import RunPaths
from .safe_fs import RunDirError, UnsafePath, read_bytes, write_atomic

MAX_NOTES_BYTES = 64 << 10
MAX_NOTE_CHARS = 500
MAX_TAGS = 16
MAX_TAG_CHARS = 32
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]*")
TAG_RULE = (
    f"letters, digits and . _ : + - (starting with a letter or digit), ≤ {MAX_TAG_CHARS} characters"
)


@dataclass(frozen=True)
class RunNotes:
    note: str = ""
    tags: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.note or self.tags)

    def summary(self, width: int = 40) -> str:
        """`#tag #tag note…`, cut to `width` characters (Home's column, the header)."""
        text = " ".join([*(f"#{t}" for t in self.tags), self.note]).strip()
        return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def note_problem(text: str) -> str:
    """Why `text` cannot be a note ("" when it can): one line, printable, not too long."""
    if len(text) > MAX_NOTE_CHARS:
        return f"the note is {len(text)} characters; at most {MAX_NOTE_CHARS}"
    if not text.isprintable():
        return "the note must be one line of printable text (no newlines or control characters)"
    return ""


def parse_tags(text: str) -> tuple[str, ...]:
    """`"a, b c"` -> ("a", "b", "c"): comma- or space-separated, duplicates dropped, in order.

    ValueError (one line) names the first bad tag; "" gives no tags (clears them)."""
    out: list[str] = []
    for tag in re.split(r"[,\s]+", text.strip()):
        if not tag:
            continue
        tag = tag.removeprefix("#")
        if len(tag) > MAX_TAG_CHARS or not _TAG.fullmatch(tag):
            raise ValueError(f"tag {quoted(tag, 37)}: use {TAG_RULE}")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"{len(out)} tags; at most {MAX_TAGS}")
    return tuple(out)


def tags_problem(text: str) -> str:
    """`parse_tags`'s complaint about `text`, or "" (a prompt's check)."""
    try:
        parse_tags(text)
    except ValueError as exc:
        return str(exc)
    return ""


class CorruptNotes(RunDirError):
    """A regular notes.json that growcockpit did not write (torn, edited, garbage): setting
    a note or tags moves it aside (`set_aside_corrupt`) and starts afresh."""


def _decode(path: Path, data: bytes) -> RunNotes:
    bad = f"{path}: not a notes file growcockpit wrote"
    again = "set the note or tags again to replace it (the bad file is kept aside)"
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CorruptNotes(f"{bad} (not JSON); {again}") from None
    if not isinstance(obj, dict):
        raise CorruptNotes(f"{bad} (not a JSON object); {again}")
    note, tags = obj.get("note", ""), obj.get("tags", [])
    if not isinstance(note, str) or note_problem(note):
        raise CorruptNotes(f"{bad} (its note is not one short line); {again}")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise CorruptNotes(f"{bad} (its tags are not a list of strings); {again}")
    try:
        parsed = parse_tags(",".join(tags))
    except ValueError as exc:
        raise CorruptNotes(f"{path}: {exc}; {again}") from None
    return RunNotes(note, parsed)


def set_aside_corrupt(run_dir: Path) -> Path:
    """Move a corrupt notes.json to notes.json.corrupt (replacing an older one); its path.

    Only after `read_notes` raised CorruptNotes: the file was then a regular file of
    ours to read (links and special files are refused before that), and nothing in it is lost."""
    path = RunPaths(Path(run_dir)).notes
    aside = path.with_name(path.name + ".corrupt")
    os.replace(path, aside)
    return aside


def read_notes(run_dir: Path) -> RunNotes:
    """The run's notes (empty when it has none); RunDirError (one line) for a bad file."""
    path = RunPaths(Path(run_dir)).notes
    try:
        data = read_bytes(path, MAX_NOTES_BYTES)
    except FileNotFoundError:
        return RunNotes()
    except UnsafePath:
        raise
    except OSError as exc:
        raise RunDirError(f"{path}: unreadable ({exc.strerror or exc})") from None
    return _decode(path, data)


def read_notes_quietly(run_dir: Path) -> RunNotes:
    """`read_notes`, or no notes when the file is bad (lists that must not fail on one run)."""
    try:
        return read_notes(run_dir)
    except RunDirError:
        return RunNotes()


def keep_corrupt_aside(run_dir: Path) -> Path | None:
    """Before replacing the notes: a corrupt notes.json goes aside (its new path), so that
    what the cockpit saves over it loses nothing; None when there was nothing to keep."""
    try:
        read_notes(run_dir)
    except CorruptNotes:
        return set_aside_corrupt(run_dir)
    except RunDirError:
        pass  # a link or special file: write_notes refuses it with its own line
    return None


def write_notes(run_dir: Path, notes: RunNotes) -> None:
    """Replace the run's notes atomically (ValueError for a note or tags that cannot be kept)."""
    problem = note_problem(notes.note)
    if problem:
        raise ValueError(problem)
    tags = parse_tags(",".join(notes.tags))
    root = Path(run_dir)
    if not root.is_dir():
        raise RunDirError(f"{root}: no such run directory; pass a directory under runs/")
    data = json.dumps({"note": notes.note, "tags": list(tags)}, ensure_ascii=False, indent=1)
    write_atomic(RunPaths(root).notes, (data + "\n").encode("utf-8"))
