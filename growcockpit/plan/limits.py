"""Upper bounds on sizes, and short echoes of bad values.

Without a ceiling, `max_seq_len = 9223372036854775807` or `batch_size =
10**18` validate and only fail deep inside torch (or exhaust memory). The
ceilings are far above any model this tool trains (BERT-Large: hidden 1024,
24 layers, 512 positions), so they only catch typos and hostile files.
Values echoed into an error line are cut, so a 100 KB value cannot make a
100 KB error.
"""

from __future__ import annotations

import stat
import unicodedata
from pathlib import Path
from typing import Any

from growcockpit.plan.names import describe_char
from growcockpit.plan.types import Plan

MAX_ECHO = 60

# key path -> the largest value accepted
CEILINGS: dict[str, int] = {
    "model.hidden_size": 65_536,
    "model.num_heads": 1_024,
    "model.intermediate_size": 262_144,
    "model.max_seq_len": 1_048_576,
    "model.final_layers": 1_024,
    "optim.batch_size": 1_048_576,
    "optim.grad_accum_steps": 65_536,
    "optim.warmup_steps": 10**12,
    "metrics.every_steps": 10**12,
    "metrics.timing_every_steps": 10**12,
    "metrics.eval_every_steps": 10**12,
    "metrics.eval_batches": 1_000_000,
    "metrics.spike_window": 100_000,
    "checkpoint.every_steps": 10**12,
    "checkpoint.keep": 1_000_000,
}
STAGE_CEILINGS: dict[str, int] = {"layers": 1_024, "width": 65_536, "steps": 10**12}
MAX_STAGE_NAME = 64


def echo(value: Any) -> str:
    """`value` as a plan writes it (a string in "…", escaped; else its repr), cut to
    MAX_ECHO characters with the length said. Not repr for a string: its '…' is how
    Python writes it, not the plan the user wrote."""
    text = double_quoted(value) if isinstance(value, str) else repr(value)
    if len(text) <= MAX_ECHO:
        return text
    return f"{text[: MAX_ECHO - 20]}… ({len(text)} characters)"


def double_quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in escaped) + '"'


def quoted(value: str) -> str:
    """`"value"` when short and printable; otherwise its cut, escaped `echo`."""
    if value.isprintable() and len(value) <= MAX_ECHO:
        return f'"{value}"'
    return echo(value)


def _too_big(key: str, value: object, ceiling: int) -> tuple[str, str] | None:
    """Sizes beyond ±ceiling: a huge negative one would reach `range()` in the shape walk
    and overflow there (small negatives get their own "must be ≥" line later)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if value > ceiling:
        return key, f"must be ≤ {ceiling:,}, got {echo(value)}; set a smaller value"
    if value < -ceiling:
        return (
            key,
            f"must be between 0 and {ceiling:,}, got {echo(value)}; set a size in that range",
        )
    return None


def _stage_name_problem(name: str) -> str | None:
    if len(name) > MAX_STAGE_NAME:
        return f"is {len(name)} characters long; use at most {MAX_STAGE_NAME}"
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return (
                f"contains {describe_char(ch)}, which would act on the terminal; "
                "use letters, digits, spaces and punctuation"
            )
    return None


def limit_problems(plan: Plan) -> list[tuple[str, str]]:
    """(key, problem) for every size above its ceiling and every unprintable stage name."""
    out: list[tuple[str, str]] = []
    for key, ceiling in CEILINGS.items():
        section, field = key.split(".")
        found = _too_big(key, getattr(getattr(plan, section), field), ceiling)
        if found:
            out.append(found)
    for i, stage in enumerate(plan.stages):
        for field, ceiling in STAGE_CEILINGS.items():
            found = _too_big(f"stages[{i}].{field}", getattr(stage, field), ceiling)
            if found:
                out.append(found)
        problem = _stage_name_problem(stage.name)
        if problem:
            out.append((f"stages[{i}].name", problem))
    return out + value_limit_problems(plan)


# -- bounds on the input itself, checked before (text) and right after (dict) parsing --------
# A plan is a few KB. Without these, a 100k-deep array gives a RecursionError traceback,
# a 100000-part dotted key or 200k stages keeps `plan validate` busy for minutes, and
# `tokenizer = "train:1000000000000"` validates and then aborts training out of memory.

MAX_PLAN_BYTES = 1 << 20
MAX_NESTING = 32
MAX_KEY_PARTS = 16
MAX_KEYS = 10_000
MAX_STAGES = 1_000
MAX_VOCAB = 1 << 20
MAX_LR = 10.0

_QUOTES = ('"""', "'''", '"', "'")


def file_limit_problem(path: Path) -> str | None:
    """Why the file at `path` cannot be a plan before it is read (a FIFO would block, a
    device never end, a 1 GB file take minutes); None when it may be read."""
    st = path.stat()
    if stat.S_ISDIR(st.st_mode):
        return None  # the reader says "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO or a device?); give the path of a .toml file"
    if st.st_size > MAX_PLAN_BYTES:
        return (
            f"is {st.st_size:,} bytes; a plan file is at most {MAX_PLAN_BYTES:,} bytes "
            "(MAX_PLAN_BYTES): this is not a plan"
        )
    return None


def text_limit_problem(text: str) -> tuple[int | None, str] | None:
    """(line, problem) when the TOML text is too big, nested too deep or has a too-long dotted key.

    One linear pass that skips strings and comments, so it answers in bounded
    time whatever the text holds (tomllib recurses per nesting level).
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PLAN_BYTES:
        return None, (
            f"is {size:,} bytes; a plan file is at most {MAX_PLAN_BYTES:,} bytes "
            f"(MAX_PLAN_BYTES): this is not a plan"
        )
    depth = parts = 0
    line = 1
    in_key = True  # before the first `=` of a line: dots separate key parts
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            in_key, parts = True, 0
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            quote = next(q for q in _QUOTES if text.startswith(q, i))
            end = _string_end(text, i, quote)
            line += text.count("\n", i, end)  # a multi-line string's lines still count
            i = end
            continue
        elif ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return line, (
                    f"arrays or inline tables nested more than {MAX_NESTING} deep "
                    "(MAX_NESTING); flatten the value"
                )
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "=" and in_key:
            in_key = False
        elif ch == "." and in_key and depth <= 1:
            parts += 1
            if parts >= MAX_KEY_PARTS:
                return line, (
                    f"a dotted key of more than {MAX_KEY_PARTS} parts (MAX_KEY_PARTS); "
                    "use a shorter key"
                )
        i += 1
    return None


def _string_end(text: str, start: int, quote: str) -> int:
    """The index just past the string that opens at `start` (the text's end if unclosed)."""
    i = start + len(quote)
    while True:
        j = text.find(quote, i)
        if j < 0:
            return len(text)
        if quote[0] == '"':
            slashes = 0
            while j - 1 - slashes >= i and text[j - 1 - slashes] == "\\":
                slashes += 1
            if slashes % 2:
                i = j + 1
                continue
        if len(quote) == 3:  # `""""` ends with the quote as content: take the last three
            while text.startswith(quote[0], j + 3):
                j += 1
        return j + len(quote)


def dict_limit_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    """(key, problem) when the parsed plan has too many keys or stages (checked before use)."""
    stages = data.get("stages")
    if isinstance(stages, list) and len(stages) > MAX_STAGES:
        return "stages", f"{len(stages):,} stages; at most {MAX_STAGES:,} (MAX_STAGES)"
    count = 0
    todo: list[object] = [data]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            count += len(value)
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(v for v in value if isinstance(v, dict | list))
        if count > MAX_KEYS:
            return "", f"more than {MAX_KEYS:,} keys (MAX_KEYS); this is not a plan"
    return None


def value_limit_problems(plan: Plan) -> list[tuple[str, str]]:
    """The tokenizer's trained vocabulary and every learning rate, against their ceilings."""
    out: list[tuple[str, str]] = []
    tok = plan.data.tokenizer
    if isinstance(tok, str) and tok.startswith("train:") and tok[6:].strip().isdigit():
        vocab = int(tok[6:].strip()[:20])
        if vocab > MAX_VOCAB:
            out.append(
                (
                    "data.tokenizer",
                    f"a trained vocabulary of {echo(vocab)} tokens; at most {MAX_VOCAB:,} "
                    '(MAX_VOCAB), e.g. "train:30522"',
                )
            )
    rates = [("optim.lr", plan.optim.lr)]
    rates += [(f"stages[{i}].lr", s.lr) for i, s in enumerate(plan.stages) if s.lr is not None]
    for key, lr in rates:
        if isinstance(lr, int | float) and not isinstance(lr, bool) and lr > MAX_LR:
            out.append((key, f"must be ≤ {MAX_LR:g} (MAX_LR), got {echo(lr)}; e.g. 3e-4"))
    return out
