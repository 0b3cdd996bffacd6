"""English prose out of unpacked documentation packages: HTML, man pages, POD and plain
text to lines of text, kept only when English, repeated paragraphs dropped.

The GPU scale of the depth gate needs far more text than the built-in corpus (≈ 2 M tokens at
vocab 1024), and the GPU machine reaches no network, so the text is built here from Debian's
documentation packages (bench/ttl/corpus.py downloads and unpacks them) and carried as one
compressed file. This module is the part that needs no network: given a directory tree as
`dpkg-deb -x` leaves it, it yields documents as lists of paragraphs, one paragraph a line.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

SKIPPED_TAGS = frozenset({"script", "style", "head", "nav", "header", "footer", "noscript"})
BLOCK_TAGS = frozenset(
    [
        "p",
        "div",
        "br",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "table",
        "tr",
        "td",
        "th",
        "section",
        "article",
        "blockquote",
        "hr",
        "title",
        "caption",
        "figcaption",
    ]
)
# Sphinx and DocBook navigation that sits in ordinary <div>s on every page
SKIPPED_CLASSES = frozenset({"sphinxsidebar", "related", "navheader", "navfooter", "footer"})
VOID_TAGS = frozenset(
    [
        "br",
        "hr",
        "img",
        "meta",
        "link",
        "input",
        "area",
        "base",
        "col",
        "embed",
        "source",
        "track",
        "wbr",
    ]
)
# a folder named for a language and country (debian-handbook/html/de-DE/, translations/zh_CN/)
COUNTRY_LOCALE = re.compile(r"^[a-z]{2,3}[-_][A-Z]{2}(\.[\w-]+)?$")
MAN_LOCALE = re.compile(r"^[a-z]{2,3}([-_][A-Za-z]{2,4})?(\.[\w-]+)?$")  # man/fr/, man/pt_BR/
SKIPPED_NAMES = re.compile(
    r"^(changelog.*|copyright|copying.*|licen[cs]e.*|genindex.*|search.*|py-modindex.*|objects\.inv|.*\.(png|gif|jpg|"
    r"jpeg|svg|css|js|xpm|pdf|dot|inv|ico|sh|py|c|h|el|source))$",
    re.IGNORECASE,
)
STOPWORDS = frozenset(
    [
        "the",
        "of",
        "and",
        "to",
        "a",
        "in",
        "is",
        "that",
        "for",
        "it",
        "as",
        "with",
        "be",
        "on",
        "are",
        "this",
        "by",
        "or",
        "an",
        "not",
        "from",
        "can",
        "at",
        "which",
        "you",
        "if",
        "will",
        "use",
        "when",
        "file",
        "its",
    ]
)
MIN_STOPWORD_SHARE = 0.12  # measured: English prose ≈ 0.3, German/French docs < 0.05, code ≈ 0.05
MIN_PARAGRAPH_CHARS = 2
MAN_SECTION = re.compile(r"\.[1-9][a-z]*$")


class _HTMLText(HTMLParser):
    """Text of an HTML page, one block element a paragraph; navigation and scripts left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._words: list[str] = []
        self._skip: list[str] = []  # open tags whose content is skipped
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        if self._skip and tag not in VOID_TAGS or tag in SKIPPED_TAGS or classes & SKIPPED_CLASSES:
            self._skip.append(tag)
        elif tag in BLOCK_TAGS:
            self._flush()
        self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag in BLOCK_TAGS:
            self._flush()
        self._pre -= tag == "pre" and self._pre > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._words.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._words).split())
        if text:
            self.paragraphs.append(text)
        self._words = []

    def text(self) -> list[str]:
        self._flush()
        return self.paragraphs


def html_paragraphs(html: str) -> list[str]:
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    return parser.text()


ROFF_ESCAPES = (
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\\((em|en)"), "-"),
    (re.compile(r"\\\((lq|rq|dq)"), '"'),
    (re.compile(r"\\\((oq|cq|aq)"), "'"),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),  # other named characters
    (re.compile(r"\\[-e]"), lambda m: "-" if m.group(0) == "\\-" else "\\"),
    (re.compile(r"\\[&|^ 0c%]"), lambda m: " " if m.group(0) in ("\\ ", "\\0") else ""),
    (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\*\(?\S{1,2}"), ""),
)
ROFF_TEXT_MACROS = frozenset(
    [
        "SH",
        "SS",
        "B",
        "I",
        "BI",
        "BR",
        "IB",
        "IR",
        "RB",
        "RI",
        "SM",
        "SB",
        "TP",
        "IP",
        "HP",
        "PP",
        "LP",
        "P",
        "TH",
    ]
)
ROFF_BREAKS = frozenset(["SH", "SS", "TP", "IP", "HP", "PP", "LP", "P", "br", "sp"])


def roff_paragraphs(roff: str) -> list[str]:
    """A man page's text: requests dropped, the text of font macros kept, escapes resolved."""
    paragraphs: list[str] = []
    words: list[str] = []

    def flush() -> None:
        if words:
            paragraphs.append(" ".join(" ".join(words).split()))
            words.clear()

    for raw in roff.splitlines():
        line = raw.rstrip()
        if line.startswith(('.\\"', "'\\\"", '.."')) or line in (".", "'"):
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name in ROFF_BREAKS:
                flush()
            if name not in ROFF_TEXT_MACROS or name == "TH":
                continue
            line = rest.replace('"', "")
        for pattern, repl in ROFF_ESCAPES:
            line = pattern.sub(repl, line)  # type: ignore[arg-type]
        if line.strip():
            words.append(line)
        else:
            flush()
    flush()
    return paragraphs


def plain_paragraphs(text: str) -> list[str]:
    """Paragraphs of a plain-text, reStructuredText or POD file: blank lines split them;
    rST underlines and POD commands other than headings are dropped."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines = [
            ln
            for ln in block.splitlines()
            if not re.fullmatch(r"\s*([=\-~^*#+`'\".])\1{2,}\s*", ln)
        ]
        if lines and lines[0].startswith("=") and not lines[0].startswith("=head"):
            continue
        joined = " ".join(" ".join(lines).split())
        paragraphs.append(re.sub(r"^=head\d\s+", "", joined))
    return [p for p in paragraphs if p]


def english(paragraphs: list[str]) -> bool:
    words = re.findall(r"[A-Za-z']+", " ".join(paragraphs).lower())
    return (
        len(words) >= 20 and sum(w in STOPWORDS for w in words) / len(words) >= MIN_STOPWORD_SHARE
    )


def foreign_path(path: Path) -> bool:
    """A path inside a non-English locale folder: html/de-DE/…, translations/zh_CN/…, or a
    language folder of man pages (man/fr/man1/…)."""
    parts = path.parts
    return any(
        not part.startswith("en")
        and (COUNTRY_LOCALE.match(part) or (parent == "man" and MAN_LOCALE.match(part)))
        for parent, part in zip(parts, parts[1:], strict=False)
    )


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def document(path: Path) -> list[str] | None:
    """The paragraphs of one file, or None when it is not a document this corpus reads."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    if SKIPPED_NAMES.match(name) or "_sources" in path.parts or foreign_path(path):
        return None
    if name.endswith((".html", ".htm", ".xhtml")):
        return html_paragraphs(read_text(path))
    if "man" in path.parts and MAN_SECTION.search(name):
        return roff_paragraphs(read_text(path))
    if name.endswith((".txt", ".rst", ".pod", ".md", ".text")) or name.upper().startswith("README"):
        return plain_paragraphs(read_text(path))
    return None


@dataclass
class Dedup:
    """Paragraphs seen so far, by a hash of their normalised text: a paragraph that repeats
    (navigation, licence boilerplate, the same page in two formats) is kept once."""

    seen: set[bytes] = field(default_factory=set)
    dropped_chars: int = 0

    def fresh(self, paragraphs: Iterable[str]) -> list[str]:
        kept = []
        for p in paragraphs:
            key = hashlib.blake2b(" ".join(p.lower().split()).encode(), digest_size=12).digest()
            if key in self.seen:
                self.dropped_chars += len(p)
                continue
            self.seen.add(key)
            kept.append(p)
        return kept


@dataclass(frozen=True)
class Doc:
    path: str
    paragraphs: list[str]


def documents(root: Path, dedup: Dedup, suffixes: tuple[str, ...] = ()) -> Iterator[Doc]:
    """Every English document under `root` in path order, its repeated paragraphs dropped;
    `suffixes` (e.g. (".html",)) limits which files are read, () reads every kind."""
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        plain = path.name[:-3] if path.name.endswith(".gz") else path.name
        if suffixes and not plain.endswith(suffixes):
            continue
        paragraphs = document(path)
        if not paragraphs or not english(paragraphs):
            continue
        kept = dedup.fresh(p for p in paragraphs if len(p) >= MIN_PARAGRAPH_CHARS)
        if kept:
            yield Doc(str(path.relative_to(root)), kept)
