"""memlab.text: one sentence splitter, one question test, one language guess, messages in it/en/zh."""

from __future__ import annotations

import string

import pytest

from memlab.app import open_memlab
from memlab.errors import InvalidInputError
from memlab.testing import FakeEmbedder, ScriptedJudge
from memlab.text import LANGS, MESSAGES, check_lang, is_question, messages, split_clauses, split_sentences


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def test_every_message_exists_in_every_language_with_the_same_fields() -> None:
    assert set(MESSAGES) == set(LANGS) == {"it", "en", "zh"}
    keys = set(MESSAGES["it"])
    for lang in LANGS:
        assert set(MESSAGES[lang]) == keys, lang
        for k in keys:
            assert MESSAGES[lang][k].strip(), (lang, k)
            assert _fields(MESSAGES[lang][k]) == _fields(MESSAGES["it"][k]), (lang, k)


def test_unknown_language_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="'lang' parameter of messages"):
        messages("fr")
    with pytest.raises(InvalidInputError, match="Assistant"):
        check_lang("IT", "Assistant")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ciao! Mi chiamo Anna. Abito a Roma", ["Ciao!", "Mi chiamo Anna.", "Abito a Roma"]),
        ("Sono alto 1.80 m. Peso 70.5 kg", ["Sono alto 1.80 m.", "Peso 70.5 kg"]),
        ("Il Dott. Rossi abita qui.\nE io?", ["Il Dott. Rossi abita qui.", "E io?"]),
        ("我叫李四。我住在上海！你呢？", ["我叫李四。", "我住在上海！", "你呢？"]),
        ('Ha detto "ciao." Poi è uscito.', ['Ha detto "ciao."', "Poi è uscito."]),
        ("", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_clauses_and_questions_and_cut() -> None:
    assert split_clauses("Amo il mare; odio la montagna") == ["Amo il mare", "odio la montagna"]
    assert [is_question(s) for s in split_sentences("Vieni? Sì. 你来吗？")] == [True, False, True]
    (cut,) = split_sentences("parola " * 100, max_chars=50)
    assert len(cut) <= 51 and cut.endswith("…")


def test_a_chinese_user_reads_the_contradiction_block_in_chinese(tmp_path) -> None:
    """The audit found Italian blocks shown to a Chinese user; with lang='zh' the block is Chinese."""
    judge = ScriptedJudge(lambda a, b: 0.97 if {"上海", "北京"} <= {w for w in ("上海", "北京") if w in a + b} else 0.02)
    with open_memlab(tmp_path / "zh.db", embedder=FakeEmbedder(), judge=judge, lang="zh") as lab:
        lab.remember("u1", "我住在上海")
        lab.turn("u1", "我住在北京")
        pending = lab.notifications.pending("u1")
        assert pending, "the scripted contradiction must reach the bell"
        reply = lab.turn("u1", "你好").response
    assert "哪条信息是正确的？" in reply or MESSAGES["zh"]["offer"] in reply or MESSAGES["zh"]["important"] in reply
    assert "Quale informazione" not in reply and "(nessun modello configurato)" not in reply
    assert "（未配置模型）" in reply


# ------------------------------------------------------------------------------------------------ display policy
RLO, PDF, FSI, PDI, LRI, RLE = "\u202e", "\u202c", "\u2068", "\u2069", "\u2066", "\u202b"
OPENERS = {"\u202a": "embed", "\u202b": "embed", "\u202d": "embed", "\u202e": "embed",
           "\u2066": "isolate", "\u2067": "isolate", "\u2068": "isolate"}


def bidi_problems(text: str) -> list[str]:
    """The unbalanced bidi controls of each line (a line is a bidi paragraph): unclosed openers, stray closers."""
    problems = []
    for line in text.split("\n"):
        stack: list[str] = []
        for ch in line:
            if ch in OPENERS:
                stack.append(OPENERS[ch])
            elif ch == PDF:
                if not stack or stack[-1] != "embed":
                    problems.append(f"stray PDF in {line!r}")
                else:
                    stack.pop()
            elif ch == PDI:
                if "isolate" not in stack:
                    problems.append(f"stray PDI in {line!r}")
                    continue
                while stack.pop() != "isolate":
                    problems.append(f"embedding closed by a PDI in {line!r}")
        problems += [f"unclosed {kind} in {line!r}" for kind in stack]
    return problems


HOSTILE = {
    "it": ["Il mio PIN è \u202e1234", "Abito a Roma\u200b", "Sono \u2067nato\u202b a Napoli", "ciao\u202c\u2069 fine"],
    "en": ["My code is \u202eevil.exe", "I live in\u2060 London\ufeff", "\u202dforced\u202a LTR", "x\u2069y\u202cz"],
    "zh": ["我的密码是\u202e1234", "我住在\u200d北京", "生日\u2066是\u202e七月", "结束\u2069\u2069"],
}


@pytest.mark.parametrize("lang", ["it", "en", "zh"])
def test_display_text_leaves_no_unbalanced_control_and_no_zero_width(lang: str) -> None:
    from memlab.text import BIDI_CONTROLS, ZERO_WIDTH, display_text

    for text in HOSTILE[lang]:
        shown = display_text(text)
        assert bidi_problems(shown) == [], (text, shown)
        assert bidi_problems(f"«{shown}» testo del sistema 1234") == []
        assert not any(ch in shown for ch in ZERO_WIDTH), shown
        if any(ch in text for ch in BIDI_CONTROLS):  # controls present: the whole text is isolated
            assert shown.startswith(FSI) and shown.endswith(PDI)
        visible = "".join(ch for ch in text if ch not in ZERO_WIDTH + BIDI_CONTROLS)
        assert "".join(ch for ch in shown if ch not in BIDI_CONTROLS) == visible  # nothing visible lost


def test_display_text_keeps_plain_text_balanced_pairs_and_emoji() -> None:
    from memlab.text import display_text

    for plain in ("Abito a Roma", "I live in London (since 2020)", "我住在北京。", ""):
        assert display_text(plain) == plain  # left-to-right text without controls is not touched
    assert display_text("שלום עולם 12") == f"{FSI}שלום עולם 12{PDI}"  # right-to-left letters: isolated
    assert display_text("مرحبا") == f"{FSI}مرحبا{PDI}"
    assert display_text(f"a{RLE}b{PDF}c") == f"{FSI}a{RLE}b{PDF}c{PDI}"  # a balanced embedding stays
    assert display_text(f"a{LRI}b{RLO}c{PDI}d") == f"{FSI}a{LRI}bc{PDI}d{PDI}"  # the PDI ends the override inside
    assert display_text("👩\u200d💻 e ❤\ufe0f\u200d🔥") == "👩\u200d💻 e ❤\ufe0f\u200d🔥"  # emoji joiners kept
    assert display_text("ali\u200dce") == "alice"  # a joiner between letters is an invisible difference
    with pytest.raises(InvalidInputError, match="display_text must be a str"):
        display_text(None)  # type: ignore[arg-type]


def test_display_text_balances_random_control_soup() -> None:
    """Any mix of controls, letters and marks comes out balanced (a seeded fuzz over 2,000 strings)."""
    import random

    from memlab.text import BIDI_CONTROLS, ZERO_WIDTH, display_text

    rng = random.Random(42)
    alphabet = BIDI_CONTROLS + ZERO_WIDTH + "ab1 «»שلا中"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        shown = display_text(text)
        assert bidi_problems(shown) == [] and bidi_problems(shown + "1234") == [], repr(text)


# ------------------------------------------------------------------------------------------------ boundary checks
@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202a", "\u202b", "\u202c",
                                  "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
                                  "\u061c"])
def test_user_ids_with_invisible_characters_are_refused(tmp_path, char: str) -> None:
    from memlab._validation import check_user_id

    for uid in (f"ali{char}ce", f"{char}alice", f"alice{char}"):
        with pytest.raises(InvalidInputError, match=f"invisible character \\(U\\+{ord(char):04X}"):
            check_user_id(uid)
    assert check_user_id("alice") == "alice" and check_user_id("José 李") == "José 李"


def test_a_lookalike_id_is_refused_everywhere_and_is_a_422(tmp_path) -> None:
    """Through the store, the notifications and the API keys: refused before anything is written; the HTTP error
    model maps the error to 422."""
    from memlab.serve.auth import ApiKeys
    from memlab.serve.errors import status_for

    with open_memlab(tmp_path / "ids.db", embedder=FakeEmbedder(), judge=ScriptedJudge(), checks=False) as lab:
        lab.store.add("alice", "Abito a Roma")
        for spoof in ("ali\u200bce", "\u202eecila"):
            for call in (lambda u=spoof: lab.store.add(u, "Abito a Milano"),
                         lambda u=spoof: lab.store.list(u),
                         lambda u=spoof: lab.notifications.create("todo", "medium", "Chiama Marco", u),
                         lambda u=spoof: ApiKeys(lab.store.db).add(u)):
                with pytest.raises(InvalidInputError, match="'user_id'") as info:
                    call()
                assert status_for(info.value) == 422
        assert [m.text for m in lab.store.list("alice")] == ["Abito a Roma"]
        assert ApiKeys(lab.store.db).list() == [] and lab.notifications.count("alice") == 0


def test_carriage_returns_are_stored_as_line_feeds(tmp_path) -> None:
    from memlab._validation import check_text

    assert check_text("riga uno\r\nriga due\rriga tre\r\n") == "riga uno\nriga due\nriga tre"
    assert check_text("a\r\n" * 3 + "b", max_chars=7) == "a\na\na\nb"  # the limit counts the normalised text
    with open_memlab(tmp_path / "cr.db", embedder=FakeEmbedder(), judge=ScriptedJudge(), checks=False) as lab:
        m = lab.store.add("alice", "Abito a Roma\r\nLavoro a Milano\rAmo il mare")
        n = lab.notifications.create("todo", "medium", "Chiama\r\nMarco", "alice")
        stored = lab.store.get(m.id, user_id="alice").text
    assert stored == "Abito a Roma\nLavoro a Milano\nAmo il mare" and "\r" not in n.content
