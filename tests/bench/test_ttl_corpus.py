"""The GPU scale's corpus (bench/ttl/corpus.py, corpus_text.py) on a fake unpacked package
tree: what is read, what is left out, repeated paragraphs, the .xz, and that the product's
data path reads the result. No network, no .deb."""

from __future__ import annotations

import gzip
import lzma
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "ttl"), str(REPO / "bench")]

from common import TTL_SIZES, plan_for  # noqa: E402
from corpus import CorpusError, Packed, pack, text_path  # noqa: E402
from corpus_text import Dedup, documents, english, roff_paragraphs  # noqa: E402

from growcockpit.backend.data.corpus import iter_line_batches, resolve_corpus  # noqa: E402
from growcockpit.plan import Stage  # noqa: E402

PROSE = (
    "The package manager reads the list of sources and it downloads the files that are "
    "needed for the upgrade, which is then applied to the system in one step."
)
SHARED = "This paragraph is on every page of the manual and it is kept once in the corpus."
GERMAN = (
    "Die Paketverwaltung liest die Liste der Quellen und lädt die Dateien herunter, die für "
    "die Aktualisierung benötigt werden, welche dann auf einmal angewendet wird."
)
ROFF = rf""".\" a comment that must not appear
.TH FOO 1 "2024" "foo 1.0"
.SH NAME
foo \- frobnicate the \fBwidgets\fR of a system
.SH DESCRIPTION
.B foo
reads the configuration file and it applies the changes to the widgets that are listed in
it, one at a time, in the order in which they are found \(em as the manual says.
.PP
{PROSE}
"""


def _write(path: Path, text: str, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "unpacked"
    doc = root / "usr" / "share" / "doc" / "pkg"
    page = (
        "<html><head><title>T</title><script>var x = 1;</script></head><body>"
        '<div class="sphinxsidebar"><p>Quick search and navigation links</p></div>'
        f"<nav>Next Previous Up</nav><h1>Upgrading</h1><p>{PROSE}</p><p>{SHARED}</p>"
        "<pre>apt-get  upgrade</pre></body></html>"
    )
    _write(doc / "html" / "en-US" / "upgrade.html", page)
    _write(doc / "html" / "en-US" / "zz-other.html", f"<p>{SHARED}</p><p>{PROSE.upper()}</p>")
    _write(doc / "html" / "de-DE" / "upgrade.html", f"<p>{GERMAN}</p>")
    _write(doc / "html" / "_sources" / "upgrade.rst.txt", PROSE)
    _write(doc / "README.txt", f"Title\n=====\n\n{PROSE} In short.\n\n{GERMAN}\n")
    _write(doc / "copyright", f"License: GPL-2+\n\n{PROSE} Copyright.\n")
    _write(doc / "logo.png", "not an image")
    _write(root / "usr" / "share" / "man" / "man1" / "foo.1.gz", ROFF, gz=True)
    _write(root / "usr" / "share" / "man" / "fr" / "man1" / "foo.1.gz", ROFF, gz=True)
    _write(
        root / "usr" / "share" / "perl" / "perlfoo.pod",
        f"=head1 NAME\n\n=over 4\n\n{PROSE} Pod.\n\n=cut\n",
    )
    _write(doc / "german.html", f"<p>{GERMAN} {GERMAN}</p>")
    return root


def test_english_documents_are_read_and_the_rest_left_out(tree: Path) -> None:
    dedup = Dedup()
    docs = {d.path: d.paragraphs for d in documents(tree, dedup)}
    assert sorted(docs) == [
        "usr/share/doc/pkg/README.txt",
        "usr/share/doc/pkg/html/en-US/upgrade.html",
        "usr/share/man/man1/foo.1.gz",
        "usr/share/perl/perlfoo.pod",
    ]  # not German pages (by folder or by words), Sphinx's _sources, copyright, images, man/fr
    page = docs["usr/share/doc/pkg/html/en-US/upgrade.html"]
    assert page == ["Upgrading", PROSE, SHARED, "apt-get upgrade"]  # no script, sidebar, nav
    # zz-other.html repeats two paragraphs (one in capitals) and the man page one: each is
    # kept once, and a page with nothing new is left out
    assert dedup.dropped_chars == len(SHARED) + 2 * len(PROSE)
    assert docs["usr/share/doc/pkg/README.txt"] == ["Title", f"{PROSE} In short.", GERMAN]


def test_a_man_page_keeps_its_text_and_drops_requests_and_escapes() -> None:
    text = " ".join(roff_paragraphs(ROFF))
    assert "comment" not in text and ".TH" not in text and "\\f" not in text
    assert "foo - frobnicate the widgets of a system" in text
    assert "as they are found - as the manual says" not in text  # the escape is a dash
    assert "in which they are found - as the manual says." in text
    assert PROSE in text


def test_the_english_filter_needs_words_and_stopwords() -> None:
    assert english([PROSE])
    assert not english([GERMAN, GERMAN])
    assert not english(["The short one."])  # too few words to judge
    assert not english(["x = foo(bar, baz); return qux[0] + quux.corge()"] * 10)


def test_pack_writes_xz_stops_at_the_cap_and_the_product_reads_it(
    tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "corpus" / "docs.txt.xz"
    records = pack(
        [(Packed("pkg", "1.0", "0" * 64, "GPL-2+"), documents(tree, Dedup()))], out, 10**6
    )
    text = lzma.decompress(out.read_bytes()).decode()
    assert text.count("\n\n") == records[0].documents == 4
    assert records[0].chars == len(text) and PROSE in text and GERMAN in text
    first = len(text.split("\n\n")[0].encode()) + 2
    capped = pack([(Packed("pkg", "1.0", "0" * 64, "x"), documents(tree, Dedup()))], out, first + 9)
    assert capped[0].documents == 1 and len(lzma.decompress(out.read_bytes())) == first

    plain = text_path(out, tmp_path / "cache")
    assert (
        plain.suffix == ".txt" and plain.read_text() == lzma.decompress(out.read_bytes()).decode()
    )
    assert text_path(out, tmp_path / "cache") == plain  # unpacked once
    lines = [ln for batch in iter_line_batches(resolve_corpus(str(plain))) for ln in batch]
    assert lines == [ln for ln in plain.read_text().splitlines() if ln]
    size = TTL_SIZES["gpu"]["gpt2"]
    size = type(size)(**{**size.__dict__, "source": str(plain)})
    plan = plan_for(size, "corpus", [Stage("s", size.layers, 1, enter="init", train="all")])
    assert plan.data.source == str(plain)


def test_a_missing_or_broken_corpus_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file; build it with bench/ttl/corpus.py"):
        text_path(tmp_path / "none.txt.xz", tmp_path)
    broken = tmp_path / "broken.txt.xz"
    broken.write_bytes(b"not xz at all")
    with pytest.raises(CorpusError, match="not a readable .xz"):
        text_path(broken, tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.part"))
