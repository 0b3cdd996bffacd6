"""`check_environment`'s checks of `[data]`: the source can be read, the tokenizer loaded.

`validate_plan` stays pure (plan/data_rules.py holds the rules it checks); these read
the disk, so they run in the one step that may (plan/environment.py).

Each check reads a few KB (the first file's head, a tokenizer's JSON, a
directory listing of the local Hugging Face cache) and never the network, so
an offline validation answers at once. Every problem is returned, not the
first: a plan with a wrong source and a wrong tokenizer says both.
"""

from __future__ import annotations

import codecs
import difflib
import json
import os
from pathlib import Path

from growcockpit.plan.data_rules import (
    source_rule_problems,
    tokenizer_rule_problems,
    trained_tokenizer,
)
from growcockpit.plan.data_source import (
    MAX_SAVED_JSON_BYTES,
    PEEK_BYTES,
    SAVE_AGAIN,
    SourceFiles,
    SourceProblem,
    missing_path,
    nearest_name,
    resolve_source,
)
from growcockpit.plan.shard_footers import footer_problem
from growcockpit.plan.source_files import SourceFileError, read_json
from growcockpit.plan.source_walk import special_note
from growcockpit.plan.types import DataSpec
from growcockpit.text import safe_json

Problem = tuple[str, str]
_ARROW_MAGIC = (b"ARROW1", b"\xff\xff\xff\xff")
_HF_FEATURES = b'{"info": {"features":'


def hub_cache() -> Path:
    """Where `huggingface_hub` keeps downloads (its own environment variables, in its order)."""
    if cache := os.environ.get("HF_HUB_CACHE"):
        return Path(cache).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache", "huggingface"
    )
    return Path(home).expanduser() / "hub"


def hub_cached(repo_id: str, repo_type: str, wanted: tuple[str, ...] = ()) -> bool:
    """Whether `repo_id` has a snapshot in the local hub cache (holding one of `wanted`)."""
    snapshots = hub_cache() / f"{repo_type}s--{repo_id.replace('/', '--')}" / "snapshots"
    try:
        found = [s for s in snapshots.iterdir() if s.is_dir()]
    except OSError:
        return False
    return any(not wanted or any((s / w).exists() for w in wanted) for s in found)


def _head(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(PEEK_BYTES)


def _columns_problem(columns: dict[str, object], spec: DataSpec, where: str) -> str | None:
    column = spec.text_column
    if column not in columns:
        fields = sorted(columns)
        hint = f'; set data.text_column = "{fields[0]}"' if len(fields) == 1 else ""
        return f"{where}: no {column!r} column (has {fields}){hint}"
    feature = columns[column]
    dtype = feature.get("dtype") if isinstance(feature, dict) else None
    if dtype is not None and dtype not in ("string", "large_string"):
        return f"{where}: column {column!r} holds {dtype}, not text; set data.text_column to a text column"
    return None


def _json_problem(path: str, head: bytes, spec: DataSpec, where: str) -> str | None:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if text.lstrip().startswith("["):
        return None  # one JSON array: `datasets` reads it; its fields are checked when read
    first = text.lstrip().split("\n", 1)[0]
    if len(first) >= len(text) - 1 and len(head) == PEEK_BYTES:
        return None  # a first record longer than the peek: checked when read
    one_per_line = "write one object per line (JSONL)"
    try:
        record = safe_json.loads(first, f"{Path(path).name} line 1", one_per_line)
    except safe_json.JsonFileError as exc:
        return f"{where}: {exc}"
    if not isinstance(record, dict):
        return f"{where}: {Path(path).name} line 1 is not a JSON object; write one object per line (JSONL)"
    return _columns_problem(record, spec, where)


def _arrow_problem(path: str, head: bytes, spec: DataSpec, where: str) -> str | None:
    if not head.startswith(_ARROW_MAGIC):
        return f"{where}: {Path(path).name} is not an Arrow file; write it with ds.save_to_disk(...) or ds.to_parquet(...)"
    saved = Path(path).parent / "dataset_info.json"
    info: object = None
    if os.path.lexists(saved):
        try:
            info = safe_json.read_json(saved, SAVE_AGAIN, MAX_SAVED_JSON_BYTES)
        except safe_json.JsonFileError as exc:
            return f"{where}: {exc}"
    elif (at := head.find(_HF_FEATURES)) >= 0:  # the schema metadata `datasets` writes
        try:
            info, _ = json.JSONDecoder().raw_decode(head[at:].decode("utf-8", errors="replace"))
            info = info.get("info") if isinstance(info, dict) else None
        except (ValueError, RecursionError):
            info = None
    features = info.get("features") if isinstance(info, dict) else None
    return _columns_problem(features, spec, where) if isinstance(features, dict) else None


def _text_problem(path: str, head: bytes, where: str) -> str | None:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < PEEK_BYTES)
    except UnicodeDecodeError:
        return f"{where}: {Path(path).name} is not UTF-8 text; give a UTF-8 .txt file, or .parquet/.jsonl/.arrow"
    return None


def peek_problem(found: SourceFiles, spec: DataSpec) -> str | None:
    """The first file's head checked for its format and the text column (None: fine)."""
    where = f"data.source = {spec.source!r}"
    if found.kind == "hub" or not found.files:
        return None
    path = found.files[0]
    try:
        head = _head(path)
    except OSError as exc:
        return f"{where}: cannot read {path} ({exc.strerror}); check the path and permissions"
    if found.kind == "parquet" and not head.startswith(b"PAR1"):
        return f"{where}: {Path(path).name} is not a Parquet file; write it with ds.to_parquet(...)"
    if found.kind == "arrow":
        return _arrow_problem(path, head, spec, where)
    if found.kind == "json":
        return _json_problem(path, head, spec, where)
    if found.kind == "text":
        return _text_problem(path, head, where)
    return None


def source_problems(spec: DataSpec) -> list[Problem]:
    """`data.source` (and `data.text_column`) problems: its rules, else what is on disk."""
    return source_rule_problems(spec) or source_file_problems(spec)


def source_file_problems(spec: DataSpec) -> list[Problem]:
    """What `data.source` names, resolved and peeked, never downloaded (its rules hold)."""
    try:
        found = resolve_source(spec.source)
    except SourceProblem as exc:
        return [("data.source", _reason(str(exc), spec))]
    if found.kind == "hub":
        if hub_cached(spec.source, "dataset") or datasets_cached(spec.source):
            return []
        if nearest_name(Path(spec.source).expanduser()):  # a typo of a file that is there
            return [
                ("data.source", _reason(str(missing_path(spec.source, Path(spec.source))), spec))
            ]
        return [
            (
                "data.source",
                f"{spec.source!r} is not a local path nor a dataset in the local Hugging Face "
                f"cache; download it once (`hf download --repo-type dataset {spec.source}`), "
                "or save it with ds.save_to_disk('DIR') and give DIR",
            )
        ]
    problem = footer_problem(found) or peek_problem(found, spec)
    key = "data.text_column" if problem and "column" in problem else "data.source"
    return [(key, _reason(problem, spec))] if problem else []


def source_file_warnings(spec: DataSpec) -> list[Problem]:
    """What `data.source` skips without failing (its rules hold): FIFOs, sockets and devices
    in its directory or glob, beside regular files that train. Never opened: `open()` on a
    FIFO blocks. A source that is nothing but such entries is a problem instead
    (`source_file_problems`)."""
    try:
        found = resolve_source(spec.source)
    except SourceProblem:
        return []  # source_file_problems says so
    return [("data.source", special_note(found.skipped))] if found.skipped else []


def _reason(message: str, spec: DataSpec) -> str:
    """A runtime message without its `data.source = '…': ` lead (the key already says it)."""
    return message.removeprefix(f"data.source = {spec.source!r}: ")


def datasets_cached(name: str) -> bool:
    """`datasets`' own cache of a prepared hub dataset (`owner___name`)."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache", "huggingface"
    )
    root = Path(os.environ.get("HF_DATASETS_CACHE") or Path(home) / "datasets")
    return (root.expanduser() / name.replace("/", "___")).is_dir()


def _tokenizer_file_problem(path: Path, spec: str) -> str | None:
    try:
        data = read_json(path)
    except (SourceFileError, OSError) as exc:
        return f"{spec!r}: {str(exc)[:160]}; save the tokenizer again with tok.save_pretrained(DIR)"
    if not isinstance(data, dict) or "model" not in data:
        return f"{spec!r}: {path.name} is not a `tokenizers` JSON file; save it with tok.save_pretrained(DIR)"
    return None


def tokenizer_problems(spec: DataSpec) -> list[Problem]:
    """`data.tokenizer`: "train:N", a `save_pretrained` directory that loads, or a cached hub id."""
    return tokenizer_rule_problems(spec) or tokenizer_file_problems(spec)


def tokenizer_file_problems(spec: DataSpec) -> list[Problem]:
    """What a tokenizer path or hub id names, on disk (its rules hold; "train:N": nothing)."""
    if trained_tokenizer(spec):
        return []
    name = spec.tokenizer
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "tokenizer.json").is_file():
            return [
                (
                    "data.tokenizer",
                    f"{name!r}: no tokenizer.json there; save a fast tokenizer with "
                    "AutoTokenizer.from_pretrained(..., use_fast=True).save_pretrained(DIR)",
                )
            ]
        problem = _tokenizer_file_problem(path / "tokenizer.json", name)
    elif path.is_file():
        problem = _tokenizer_file_problem(path, name)
    elif name.startswith((".", "/", "~")) or name.endswith(".json"):
        problem = f'{name!r}: no such file or directory; fix the path, or use "train:8000"'
    elif hub_cached(name, "model", ("tokenizer.json", "tokenizer_config.json")):
        problem = None
    elif near := _tokenizer_typo(name):
        problem = f"{name!r} is not a tokenizer; did you mean {near!r}?"
    else:
        problem = (
            f"{name!r} is not a local directory nor a tokenizer in the local Hugging Face cache; "
            f"download it once (`hf download {name}`), or save it with "
            'tok.save_pretrained(DIR) and give DIR, or use "train:8000"'
        )
    return [("data.tokenizer", problem)] if problem else []


def _tokenizer_typo(name: str) -> str | None:
    """The spelling `name` was likely meant as: `train:N` for `trian:N`, or a directory next to it."""
    prefix, colon, rest = name.partition(":")
    if (
        colon
        and prefix != "train"
        and difflib.get_close_matches(prefix.lower(), ["train"], cutoff=0.6)
    ):
        return f"train:{rest.strip()}"
    near = nearest_name(Path(name).expanduser())
    return near if near and Path(near).expanduser().is_dir() else None
