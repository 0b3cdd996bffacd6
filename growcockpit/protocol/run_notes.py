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
import re
from dataclasses import dataclass
from pathlib import Path

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
            shown = tag if len(tag) <= 40 else tag[:37] + "..."
            raise ValueError(f"tag {ascii(shown)}: use {TAG_RULE}")
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


def _decode(path: Path, data: bytes) -> RunNotes:
    bad = f"{path}: not a notes file growcockpit wrote"
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RunDirError(f"{bad} (not JSON); set the note again to replace it") from None
    if not isinstance(obj, dict):
        raise RunDirError(f"{bad} (not a JSON object); set the note again to replace it")
    note, tags = obj.get("note", ""), obj.get("tags", [])
    if not isinstance(note, str) or note_problem(note):
        raise RunDirError(f"{bad} (its note is not one short line); set the note again")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise RunDirError(f"{bad} (its tags are not a list of strings); set the tags again")
    try:
        parsed = parse_tags(",".join(tags))
    except ValueError as exc:
        raise RunDirError(f"{path}: {exc}; set the tags again") from None
    return RunNotes(note, parsed)


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
