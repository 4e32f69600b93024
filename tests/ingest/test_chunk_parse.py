"""Parsing (Markdown, HTML, text) and boundary-aware chunking with overlap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.errors import InvalidInputError
from memlab.ingest import chunk_text, detect_format, parse_document

MD = """# Viaggio a Tokyo

Partenza il **12 marzo** da Roma.
Volo con scalo a *Doha*.

## Cose da vedere

- Il tempio `Senso-ji`
- Il mercato di Tsukiji

```
orario: 9:00
```
"""

HTML = """<html><head><title>Ricette</title><style>p{color:red}</style><script>alert('x')</script></head>
<body><nav>Home | Menu</nav><h1>Carbonara</h1><p>Guanciale, uova e <b>pecorino</b>.<br>Sale.</p>
<ul><li>Niente panna!</li></ul><h2>Tempi</h2><div><p>Venti minuti.</p></div><footer>© 2026</footer></body></html>"""


def test_markdown_sections_drop_markup_keep_text() -> None:
    doc = parse_document(MD, fmt="markdown")
    assert doc.title == "Viaggio a Tokyo"
    assert [s.heading for s in doc.sections] == ["Viaggio a Tokyo", "Cose da vedere"]
    assert doc.sections[0].text == "Partenza il 12 marzo da Roma.\nVolo con scalo a Doha."
    assert "Il tempio Senso-ji" in doc.sections[1].text and "orario: 9:00" in doc.sections[1].text
    assert "**" not in doc.text and "`" not in doc.text


def test_html_drops_scripts_styles_and_chrome() -> None:
    doc = parse_document(HTML.encode("utf-8"), fmt="html")
    assert doc.title == "Ricette"
    assert [(s.heading, s.text) for s in doc.sections] == [
        ("Carbonara", "Guanciale, uova e pecorino.\nSale.\n\nNiente panna!"), ("Tempi", "Venti minuti.")]
    assert "alert" not in doc.text and "color" not in doc.text and "Home" not in doc.text and "©" not in doc.text


def test_text_is_cleaned() -> None:
    doc = parse_document("  Ciao\x00 mondo\r\n\r\n\r\n\r\nfine  ", fmt="text")
    assert doc.text == "Ciao mondo\n\nfine" and doc.title == ""
    assert parse_document("   ", fmt="text").sections == ()


def test_formats_and_bad_input() -> None:
    assert [detect_format(n) for n in ("a.md", "b.HTML", "c.txt")] == ["markdown", "html", "text"]
    with pytest.raises(InvalidInputError, match="unsupported file type '.pdf'"):
        detect_format("x.pdf")
    with pytest.raises(InvalidInputError, match="fmt"):
        parse_document("x", fmt="pdf")
    with pytest.raises(InvalidInputError):
        parse_document(42, fmt="text")  # type: ignore[arg-type]


def test_chunks_cut_at_sentences_and_overlap() -> None:
    text = " ".join(f"Frase numero {i} sul mio gatto." for i in range(30))
    chunks = chunk_text(text, size=120, overlap=30)
    assert len(chunks) > 5
    for c in chunks:
        assert len(c.text) <= 120 and text[c.start:c.end] == c.text
    # all but the last end at a sentence end, and each next chunk starts before the previous one ended
    assert all(c.text.endswith(".") for c in chunks)
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(not text[b.start - 1].isalnum() for b in chunks[1:])  # starts at a word start


def test_paragraph_breaks_win_over_sentences() -> None:
    text = "Primo paragrafo, breve ma completo. Ancora.\n\nSecondo paragrafo che continua a lungo oltre la finestra."
    first = chunk_text(text, size=70, overlap=0)[0]
    assert first.text == "Primo paragrafo, breve ma completo. Ancora."


def test_chinese_sentences_split_without_spaces() -> None:
    text = "我住在北京。我喜欢吃饺子。明天去上海。" * 4
    chunks = chunk_text(text, size=30, overlap=6)
    assert all(c.text.endswith("。") for c in chunks[:-1])
    assert "".join(c.text for c in chunks).count("北京") >= 4


def test_chunk_parameters_are_validated() -> None:
    assert chunk_text("", size=50, overlap=5) == []
    for kw in ({"size": 10}, {"size": 50, "overlap": 25}, {"size": 50, "overlap": -1}, {"size": True}):
        with pytest.raises(InvalidInputError):
            chunk_text("abc", **kw)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab .\n。è")), max_size=400),
       size=st.integers(20, 120), overlap=st.integers(0, 9))
def test_chunks_cover_every_character(text: str, size: int, overlap: int) -> None:
    chunks = chunk_text(text, size=size, overlap=overlap)
    covered = set()
    for c in chunks:
        assert 0 < len(c.text) <= size and text[c.start:c.end] == c.text
        covered.update(range(c.start, c.end))
    assert {i for i, ch in enumerate(text) if not ch.isspace()} <= covered
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
