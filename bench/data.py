"""The data path at the papers' scale: tokenization speed and peak memory, new path vs old.

Builds a text corpus of `--gb` GB locally (the builtin corpus's lines, shuffled and
repeated with a seed), tokenizes it with the memory-mapped token shard path
(backend/data/token_cache.py) and trains a few steps on it; then does the same with the
previous path (whole corpus through a non-streaming `datasets` load into memory, one
int32 id array, blocks as one int64 tensor) on a `--old-gb` corpus it can handle, and
the new path on that same small corpus for a like-for-like tokens/s ratio. Each phase
runs in its own process, so each peak RSS is that phase's own. Prints one line per
phase and the ratios:

    new  2.00 GB  tokenize 512.3M tokens  1.23M tok/s  peak RSS 0.41 GB | train peak RSS 0.62 GB
    ...

Usage: python bench/data.py [--gb 2] [--old-gb 0.2] [--workdir DIR] [--json out.json]
Do not run the 2 GB size on a shared machine: it takes minutes of both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VOCAB = 8000  # the shared tokenizer's vocabulary (trained once on the builtin corpus)


def build_corpus(path: Path, gb: float, seed: int = 0) -> int:
    """`gb` GB of the builtin corpus's lines, shuffled and repeated with `seed`; returns bytes."""
    from growcockpit.backend.data.corpus import builtin_files

    lines = [
        line
        for f in builtin_files()
        for line in Path(f).read_text(encoding="utf-8", errors="replace").splitlines()
        if line.strip()
    ]
    rng = random.Random(seed)
    target = int(gb * 1e9)
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < target:
            rng.shuffle(lines)
            chunk = "\n".join(lines) + "\n"
            out.write(chunk)
            written += len(chunk.encode())
    return written


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ---- phases (each runs in a fresh process: python bench/data.py --phase NAME ...) ------
def phase_tokenize_new(corpus: str, tokenizer: str) -> dict[str, Any]:
    from growcockpit.backend.data.corpus import resolve_corpus
    from growcockpit.backend.data.token_cache import tokenize_to_shard
    from growcockpit.backend.data.tokenizer import build_tokenizer

    c = resolve_corpus(corpus)
    tok = build_tokenizer(tokenizer, "bert", c, None)
    start = time.perf_counter()
    shard = tokenize_to_shard(c, tok, "bert")
    seconds = time.perf_counter() - start
    return {"tokens": shard.count, "seconds": seconds, "peak_rss": peak_rss()}


def phase_tokenize_old(corpus: str, tokenizer: str) -> dict[str, Any]:
    """The previous path, as it was: every line in memory, one int32 array, np.save."""
    import datasets
    import numpy as np

    from growcockpit.backend.data.corpus import resolve_corpus
    from growcockpit.backend.data.tokenizer import build_tokenizer

    datasets.disable_progress_bars()
    c = resolve_corpus(corpus)
    tok = build_tokenizer(tokenizer, "bert", c, None)
    start = time.perf_counter()
    ds = datasets.load_dataset(c.kind, data_files=list(c.files), split="train")
    texts = [[t for t in ds[c.text_column] if t]]
    backend = tok.backend_tokenizer
    chunks: list[np.ndarray] = []
    for doc in texts:
        for s in range(0, len(doc), 4096):
            enc = backend.encode_batch(doc[s : s + 4096], add_special_tokens=False)
            chunks.extend(np.asarray(e.ids, dtype=np.int32) for e in enc)
        chunks.append(np.asarray([tok.sep_token_id], dtype=np.int32))
    ids = np.concatenate(chunks)
    out = Path(os.environ["GROWCOCKPIT_CACHE"]) / "old-ids.npy"
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, ids)
    seconds = time.perf_counter() - start
    return {"tokens": int(len(ids)), "seconds": seconds, "peak_rss": peak_rss()}


def _train_steps(data: Any, steps: int) -> float:
    import torch

    from growcockpit.backend.loop.forward import StagedForward
    from growcockpit.backend.model import build_model
    from growcockpit.plan.types import ModelSpec

    spec = ModelSpec(hidden_size=64, num_heads=2, intermediate_size=128, max_seq_len=128)
    model = build_model(spec, 2, data.tokenizer)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = torch.zeros(())
    for step in range(steps):
        loss = StagedForward(0, True).loss(model, data.train_batch(step, 16))
        loss.backward()
        opt.step()
        opt.zero_grad()
    return float(loss)


def phase_train_new(corpus: str, tokenizer: str, steps: int) -> dict[str, Any]:
    from growcockpit.backend.data.blocks import load_blocks
    from growcockpit.plan.types import DataSpec

    data = load_blocks(DataSpec(source=corpus, tokenizer=tokenizer, seq_len=128), "bert", 0)
    loss = _train_steps(data, steps)
    return {"loss": loss, "blocks": len(data.train), "peak_rss": peak_rss()}


def phase_train_old(corpus: str, tokenizer: str, steps: int) -> dict[str, Any]:
    """The previous path: np.load the whole id array, then one int64 tensor of blocks."""
    import numpy as np
    import torch

    from growcockpit.backend.data.blocks import Batch, mask_tokens
    from growcockpit.backend.data.corpus import resolve_corpus
    from growcockpit.backend.data.tokenizer import build_tokenizer

    c = resolve_corpus(corpus)
    tok = build_tokenizer(tokenizer, "bert", c, None)
    ids = np.load(Path(os.environ["GROWCOCKPIT_CACHE"]) / "old-ids.npy")
    body = 126
    n = len(ids) // body
    blocks = torch.from_numpy(ids[: n * body].astype(np.int64)).view(n, body)
    cls = torch.full((n, 1), tok.cls_token_id, dtype=torch.long)
    sep = torch.full((n, 1), tok.sep_token_id, dtype=torch.long)
    blocks = torch.cat([cls, blocks, sep], dim=1)

    special = torch.tensor(sorted(set(tok.all_special_ids)), dtype=torch.long)

    class Old:
        """The old TokenBlocks' batch recipe over the in-memory block tensor."""

        tokenizer = tok

        def train_batch(self, step: int, batch: int) -> Batch:
            gen = torch.Generator().manual_seed(step)
            rows = torch.randint(n, (batch,), generator=gen)
            return mask_tokens(blocks[rows], tok.mask_token_id, special, len(tok), 0.15, gen)

    loss = _train_steps(Old(), steps)
    return {"loss": loss, "blocks": n, "peak_rss": peak_rss()}


PHASES = {
    "tokenize_new": phase_tokenize_new,
    "tokenize_old": phase_tokenize_old,
    "train_new": phase_train_new,
    "train_old": phase_train_old,
}


def run_phase(name: str, cache: Path, *args: object) -> dict[str, Any]:
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, __file__, "--phase", name, *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=2.0, help="size of the large corpus (new path)")
    p.add_argument("--old-gb", type=float, default=0.2, help="size the old path is measured at")
    p.add_argument("--steps", type=int, default=5, help="training steps after tokenizing")
    p.add_argument("--workdir", type=Path, help="where corpora and caches go (default: a tmp dir)")
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        fn = PHASES[args.phase]
        values = [int(v) if v.isdigit() else v for v in args.rest]
        print(json.dumps(fn(*values)))
        return
    work = args.workdir or Path(tempfile.mkdtemp(prefix="gc-bench-data-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    # one tokenizer for every corpus (trained once on the builtin corpus): the figures are
    # tokenization, not vocabulary training
    tok_dir = work / "tokenizer"
    if not tok_dir.exists():
        env = dict(os.environ, GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1")
        code = (
            "from growcockpit.backend.data.blocks import load_blocks; from growcockpit.plan.types import DataSpec; "
            f"d = load_blocks(DataSpec(tokenizer='train:{VOCAB}'), 'bert', 0); "
            f"d.tokenizer.save_pretrained({str(tok_dir)!r})"
        )
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
    small, large = work / "small" / "corpus.txt", work / "large" / "corpus.txt"
    for path, gb in ((small, args.old_gb), (large, args.gb)):
        path.parent.mkdir(exist_ok=True)
        if not path.exists() or abs(path.stat().st_size - gb * 1e9) > 0.05 * gb * 1e9:
            build_corpus(path, gb)
    rows = []
    for label, corpus, path in (
        ("small", small, "old"),
        ("small", small, "new"),
        ("large", large, "new"),
    ):
        shard_cache = work / f"cache-{label}-{path}"
        rows.append(measure(label, corpus, shard_cache, path, args.steps, tok_dir))
    old, new_small, new_large = rows
    speed = new_small["tokens_per_s"] / old["tokens_per_s"]
    print(
        f"tokenization speed, new / old at {old['bytes'] / 1e9:.2f} GB: {speed:.2f}x (target >= 2x); "
        f"peak RSS at {new_large['bytes'] / 1e9:.2f} GB: tokenize {new_large['tokenize_peak_rss'] / 1e9:.2f} GB, "
        f"train {new_large['train_peak_rss'] / 1e9:.2f} GB (target < 1.5 GB)"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "speedup": speed}, indent=2))


def measure(
    label: str, corpus: Path, cache: Path, path: str, steps: int, tok_dir: Path
) -> dict[str, Any]:
    """Tokenize `corpus` on the `path` ("old" or "new"), then train a few steps on it."""
    tok = run_phase(f"tokenize_{path}", cache, corpus, tok_dir)
    train = run_phase(f"train_{path}", cache, corpus, tok_dir, steps)
    size = corpus.stat().st_size
    row = {
        "label": label,
        "path": path,
        "bytes": size,
        "tokens": tok["tokens"],
        "tokenize_s": tok["seconds"],
        "tokens_per_s": tok["tokens"] / tok["seconds"],
        "tokenize_peak_rss": tok["peak_rss"],
        "train_peak_rss": train["peak_rss"],
    }
    print(
        f"{label:<6} {path}  {size / 1e9:5.2f} GB  tokenize {tok['tokens'] / 1e6:7.1f}M tokens "
        f"{row['tokens_per_s'] / 1e6:5.2f}M tok/s  peak RSS {tok['peak_rss'] / 1e9:5.2f} GB | "
        f"train {steps} steps peak RSS {train['peak_rss'] / 1e9:5.2f} GB",
        flush=True,
    )
    return row


if __name__ == "__main__":
    main()
