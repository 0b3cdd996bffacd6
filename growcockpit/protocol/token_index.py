"""What the token cache holds for a plan's data, readable without torch.

Each time the backend tokenizes a corpus into a token shard it leaves a small
record here (`<cache>/tokens/sources/<key>.json`): the corpus files with their
sizes and mtimes, the token count and how long tokenizing took. The designer's
Data tab reads it to say, before a launch, whether the corpus is cached or will
be tokenized, and about how long that will take.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from growcockpit.text import safe_json


def cache_root() -> Path:
    root = os.environ.get("GROWCOCKPIT_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "growcockpit"


def source_key(source: str, tokenizer: str, family: str) -> str:
    """The record's name: the plan's own words for its data (local paths made absolute)."""
    local = Path(source).expanduser()
    where = str(local.resolve()) if local.exists() else source
    return hashlib.sha1(json.dumps([where, tokenizer, family]).encode()).hexdigest()[:16]


def record_path(source: str, tokenizer: str, family: str) -> Path:
    return cache_root() / "tokens" / "sources" / f"{source_key(source, tokenizer, family)}.json"


@dataclass(frozen=True)
class CacheRecord:
    files: list[tuple[str, int, int]]  # path, size, mtime (seconds)
    tokens: int
    seconds: float

    @property
    def bytes(self) -> int:
        return sum(size for _, size, _ in self.files)

    def current(self) -> bool:
        """The files are still the ones that were tokenized (same sizes and mtimes)."""
        try:
            return all(
                (os.stat(f).st_size, int(os.stat(f).st_mtime)) == (size, mtime)
                for f, size, mtime in self.files
            )
        except OSError:
            return False


def write_record(path: Path, record: CacheRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    data = {"files": record.files, "tokens": record.tokens, "seconds": record.seconds}
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_record(path: Path) -> CacheRecord | None:
    try:
        data = safe_json.read_json(path, "it is rebuilt on the next launch", 64 << 20)
        if not isinstance(data, dict):
            return None
        files = [(str(f), int(s), int(m)) for f, s, m in data["files"]]
        return CacheRecord(files, int(data["tokens"]), float(data["seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def bytes_per_second() -> float | None:
    """Tokenizing speed of the most recent records on this machine (None: never measured)."""
    folder = cache_root() / "tokens" / "sources"
    rates = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)[-5:]:
        rec = read_record(path)
        if rec is not None and rec.seconds > 0 and rec.bytes > 0:
            rates.append(rec.bytes / rec.seconds)
    return sum(rates) / len(rates) if rates else None


def local_bytes(source: str) -> int | None:
    """Size of a local corpus (a file, or the files under a directory); None otherwise."""
    path = Path(source).expanduser()
    try:
        if path.is_file():
            return path.stat().st_size
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return None
    return None


def data_state(source: str, tokenizer: str, family: str, size: int | None = None) -> str:
    """One line for the designer: corpus size, token count, cached or not (and how long).
    `size`: the corpus' bytes when the caller knows its files (a directory's data files,
    found by a bounded walk), else the file's or directory's size."""
    rec = read_record(record_path(source, tokenizer, family))
    if rec is not None and rec.current():
        return (
            f"cached: {rec.tokens:,} tokens from {rec.bytes / 1e6:,.1f} MB "
            f"({len(rec.files)} file{'s' if len(rec.files) != 1 else ''}); launches start at once"
        )
    size = local_bytes(source) if size is None else size
    if size is None:
        return f"will tokenize {source!r} on launch (its size is known once it is read)"
    what = f"{size / 1e6:,.1f} MB of text"
    rate = bytes_per_second()
    if not rate:
        return f"will tokenize {what} on launch (time unknown: nothing tokenized here yet)"
    eta = size / rate
    when = f"about {eta:.0f} s" if eta < 120 else f"about {eta / 60:.0f} min"
    return f"will tokenize {what} on launch ({when} at this machine's last measured speed)"
