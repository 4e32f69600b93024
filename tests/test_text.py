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
