"""The GPU scale's corpus: English documentation text from Debian packages, built here and
carried to the GPU machine as one .txt.xz file (≤ 60 MiB), which the bench unpacks once and
hands to the product as a plain-text data source (`time_to_loss.py --corpus PATH`).

    python bench/ttl/corpus.py build --out out/corpus/debian-docs.txt.xz   # needs apt-get, dpkg-deb
    python bench/ttl/corpus.py prepare out/corpus/debian-docs.txt.xz --families gpt2,llama

`build` runs `apt-get update` (when `--update`), `apt-get download` for every package of
PACKAGES (all in Debian main; their licences below were read from each package's copyright
file), unpacks each with `dpkg-deb -x`, extracts English text (bench/ttl/corpus_text.py),
drops repeated paragraphs, and writes the .txt.xz with a manifest beside it (<out>.json:
package versions, .deb sha256s, licences, characters per package, the file's sha256).
`prepare` unpacks the .txt.xz into the token cache and tokenizes it with the product's data
path once per family, so parallel runs find the tokenizer and the token shard cached.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _path in (HERE.parents[1], HERE.parent, HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from corpus_text import Dedup, Doc, documents  # noqa: E402

MiB = 1 << 20


@dataclass(frozen=True)
class Package:
    name: str
    licence: str  # as its copyright file states it
    suffixes: tuple[str, ...] = ()  # which files to read; () = every kind corpus_text reads


# Prose first: when --max-text-mib cuts the corpus, the API-heavy references go.
PACKAGES: tuple[Package, ...] = (
    Package("python3.11-doc", "PSF-2.0 (the Python licence)", (".html",)),
    Package("debian-reference-en", "GPL-2+"),
    Package("debian-handbook", "GPL-2+ or CC-BY-SA-3.0"),
    Package("debian-policy", "GPL-2+ (parts BSD-3-clause, FHS licence)"),
    Package("developers-reference", "GPL-2"),
    Package("postgresql-doc-15", "PostgreSQL"),
    Package("python-django-doc", "BSD-3-Clause"),
    Package("sphinx-doc", "BSD-2-clause", (".html",)),
    Package("sqlite3-doc", "public-domain"),
    Package("git-doc", "GPL-2"),
    Package("perl-doc", "GPL-1+ or Artistic"),
    Package("vim-doc", "Vim licence"),
    Package("octave-doc", "GPL-3+", (".html",)),
    Package("r-doc-html", "GPL-2"),
    Package("libreoffice-help-en-us", "MPL-2.0"),
    Package("manpages", "GPL-2+, BSD-2-clause and other free licences per page"),
    Package("manpages-dev", "GPL-2+, BSD-2-clause and other free licences per page"),
    Package("linux-doc-6.1", "GPL-2", (".html",)),
)
# Tried and left out: rust-doc (MIT or Apache-2.0): 32,000 API pages, mostly signatures, that
# took longer to extract than all the packages above together on a 2-core machine.


class CorpusError(Exception):
    """A build or unpack step failed; the message names the step and the fix."""


@dataclass
class Packed:
    """What went into the corpus from one package."""

    package: str
    version: str
    deb_sha256: str
    licence: str
    documents: int = 0
    chars: int = 0


def pack(
    sources: Iterable[tuple[Packed, Iterable[Doc]]], out: Path, max_text_bytes: int
) -> list[Packed]:
    """Write every source's documents to `out` (xz), one paragraph a line and a blank line
    between documents, until `max_text_bytes` of text; a document that would pass the cap
    ends the corpus. Returns what each source put in."""
    out.parent.mkdir(parents=True, exist_ok=True)
    written, done = 0, []
    tmp = out.with_name(out.name + ".part")
    with lzma.open(tmp, "wt", encoding="utf-8", preset=9) as fh:
        for packed, docs in sources:
            for doc in docs:
                text = "\n".join(doc.paragraphs) + "\n\n"
                size = len(text.encode())
                if written + size > max_text_bytes:
                    break
                fh.write(text)
                written += size
                packed.documents += 1
                packed.chars += len(text)
            else:
                done.append(packed)
                continue
            done.append(packed)
            break
    tmp.replace(out)
    return done


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(MiB), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _run(argv: list[str], cwd: Path) -> str:
    try:
        return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise CorpusError(
            f"corpus: {argv[0]} not found; build the corpus on a Debian machine"
        ) from None
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or exc.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise CorpusError(f"corpus: `{' '.join(argv)}` failed: {last[0]}") from None


def fetch(package: Package, work: Path) -> tuple[Packed, Path]:
    """Download and unpack one package; its record and its unpacked root."""
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package.name}_*.deb"))
    if not found:
        _run(["apt-get", "download", package.name], debs)
        found = sorted(debs.glob(f"{package.name}_*.deb"))
    if not found:
        raise CorpusError(f"corpus: apt-get download {package.name} left no .deb in {debs}")
    deb = found[-1]
    root = work / "unpacked" / package.name
    if not root.is_dir():  # unpacked beside it, then renamed: an interrupted unpack is redone
        part = root.with_name(f"{root.name}.part")
        shutil.rmtree(part, ignore_errors=True)
        part.parent.mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-x", str(deb), str(part)], work)
        part.rename(root)
    version = _run(["dpkg-deb", "-f", str(deb), "Version"], work).strip()
    return Packed(package.name, version, sha256(deb), package.licence), root


def build(args: argparse.Namespace) -> int:
    work = args.work or args.out.parent / "work"
    chosen = [p for p in PACKAGES if not args.packages or p.name in args.packages.split(",")]
    if args.update:
        _run(["apt-get", "update", "-qq"], Path.cwd())
    dedup = Dedup()
    started = time.monotonic()

    def sources() -> Iterable[tuple[Packed, Iterable[Doc]]]:
        for package in chosen:
            packed, root = fetch(package, work)
            print(f"corpus: {package.name} {packed.version}", flush=True)
            yield packed, documents(root, dedup, package.suffixes)

    packed = pack(sources(), args.out, int(args.max_text_mib * MiB))
    size = args.out.stat().st_size
    chars = sum(p.chars for p in packed)
    manifest = {
        "file": args.out.name,
        "sha256": sha256(args.out),
        "bytes": size,
        "text_chars": chars,
        "repeated_chars_dropped": dedup.dropped_chars,
        "packages": [asdict(p) for p in packed],
    }
    Path(f"{args.out}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(
        f"corpus: {args.out} {size / MiB:.1f} MiB xz, {chars / 1e6:.1f} M characters from "
        f"{len(packed)} packages ({dedup.dropped_chars / 1e6:.1f} M repeated dropped), "
        f"{time.monotonic() - started:.0f} s"
    )
    if size > args.max_mib * MiB:
        print(
            f"corpus: {args.out} is over --max-mib {args.max_mib}; lower --max-text-mib",
            file=sys.stderr,
        )
        return 1
    return 0


def text_path(corpus: Path, cache: Path | None = None) -> Path:
    """The plain-text file the product reads: `corpus` itself unless it is .xz, else its
    decompressed copy in the token cache (made once, named by the .xz's size and mtime)."""
    if not corpus.is_file():
        raise CorpusError(
            f"--corpus {corpus}: no such file; build it with bench/ttl/corpus.py build"
        )
    if corpus.suffix != ".xz":
        return corpus
    from growcockpit.protocol.token_index import cache_root

    st = corpus.stat()
    tag = hashlib.sha1(f"{corpus.resolve()}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[
        :12
    ]
    target = (cache or cache_root()) / "corpora" / f"{corpus.name[: -len('.txt.xz')]}-{tag}.txt"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.part")
        try:
            with lzma.open(corpus, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 4 * MiB)
        except lzma.LZMAError as exc:
            tmp.unlink(missing_ok=True)
            raise CorpusError(
                f"--corpus {corpus}: not a readable .xz ({exc}); build it again"
            ) from None
        tmp.replace(target)
    return target


def prepare(args: argparse.Namespace) -> int:
    """Tokenize the corpus once per family (the tokenizer trained at --vocab), so runs started
    in parallel afterwards all find it in the cache; prints tokens and seconds."""
    from common import TTL_SIZES, plan_for

    from growcockpit.backend.data.blocks import load_blocks
    from growcockpit.plan import Stage

    started = time.monotonic()
    source = text_path(args.corpus)
    print(
        f"corpus: {source} ({source.stat().st_size / MiB:.0f} MiB text) in {time.monotonic() - started:.0f} s"
    )
    for family in args.families.split(","):
        size = TTL_SIZES[args.scale][family]
        size = type(size)(**{**asdict(size), "source": str(source)})
        plan = plan_for(size, "corpus", [Stage("s", size.layers, 1, enter="init", train="all")])
        t = time.monotonic()
        blocks = load_blocks(plan.data, family, 0)
        tokens = int(blocks.train.shape[0]) * size.seq
        print(
            f"corpus: {family} vocab {size.vocab}: {tokens / 1e6:.1f} M training tokens "
            f"({tokens / (size.steps * size.batch * size.seq):.2f}× the tokens of the scale's "
            f"{size.steps}-step budget; "
            f"{time.monotonic() - t:.0f} s)",
            flush=True,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="download, extract and pack (needs apt-get and dpkg-deb)")
    b.add_argument("--out", type=Path, required=True, help="the .txt.xz to write")
    b.add_argument(
        "--work", type=Path, help="downloads and unpacked packages (default: beside --out)"
    )
    b.add_argument("--packages", help="a comma-separated subset of the package list")
    b.add_argument("--max-text-mib", type=float, default=400.0, help="text before compression")
    b.add_argument(
        "--max-mib", type=float, default=60.0, help="the .xz's limit (the carry's is 64)"
    )
    b.add_argument("--update", action="store_true", help="run apt-get update first")
    p = sub.add_parser("prepare", help="unpack into the token cache and tokenize once per family")
    p.add_argument("corpus", type=Path)
    p.add_argument("--families", default="gpt2,llama")
    p.add_argument("--scale", default="gpu")
    args = ap.parse_args(argv)
    if args.command == "build" and not args.out.name.endswith(".txt.xz"):
        print(f"corpus: --out {args.out}: name it <name>.txt.xz", file=sys.stderr)
        return 2
    try:
        return build(args) if args.command == "build" else prepare(args)
    except CorpusError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
