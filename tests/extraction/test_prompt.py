"""format_for_prompt: seed 001's sections, Italian and English."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.errors import InvalidInputError
from memlab.extraction import (
    ConversationMemory,
    Coverage,
    StoredFact,
    Tone,
    TopicState,
    UnansweredArea,
    format_for_prompt,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _fact(i: int, content: str, conf: float = 0.9, active: bool = True) -> StoredFact:
    return StoredFact(id=i, content=content, topic=None, extracted_at=NOW, confidence=conf, keywords=(), key=None,
                      value=None, type="fact", memory_id=i, source=f"conv:c/msg:{i}", message_index=i, is_active=active)


def _mem(**kw: object) -> ConversationMemory:
    base = dict(conversation_id="c", user_id="u", n_messages=3, avg_response_length=42.0)
    return ConversationMemory(**{**base, **kw})  # type: ignore[arg-type]


def test_italian_sections() -> None:
    mem = _mem(
        facts=(_fact(1, "L'utente si chiama Zhang San", active=False), _fact(2, "L'utente si chiama Li Si"),
               _fact(3, "Forse ha un gatto", conf=0.4)),
        topics=(TopicState("lavoro", "Lavoro", Coverage.MODERATE, ("ruolo", "azienda"), ("orari",)),),
        unanswered=(UnansweredArea("età", 2, 2, "user declined"),),
        fatigue=0.62, tone=Tone.BRIEF, emoji_used=True,
    )
    out = format_for_prompt(mem)
    for heading in ("## INFORMAZIONI GIÀ RACCOLTE", "⚠️ NON chiedere nuovamente informazioni su questi temi",
                    "## TOPIC GIÀ DISCUSSI", "## ⚠️ ATTENZIONE: SEGNALI DI FATICA", "Fai domande più brevi e dirette",
                    "Considera di saltare approfondimenti non essenziali", "Valuta se concludere prima del previsto",
                    "## STILE COMUNICATIVO RILEVATO", "emoji"):
        assert heading in out
    assert "- <memory>L'utente si chiama Li Si</memory>" in out
    assert "Zhang San" not in out  # superseded value
    assert "gatto" not in out  # below the confidence floor
    assert "- Lavoro: moderate (coperti: ruolo, azienda) [mancanti: orari]" in out
    assert "0.62" in out and "età" in out


def test_english_sections() -> None:
    out = format_for_prompt(_mem(facts=(_fact(1, "The user lives in Rome"),), fatigue=0.7, tone=Tone.FORMAL), lang="en")
    for heading in ("## INFORMATION ALREADY COLLECTED", "Do NOT ask again", "## ⚠️ WARNING: SIGNS OF FATIGUE",
                    "## DETECTED COMMUNICATION STYLE", "formally", "avoid them"):
        assert heading in out
    assert "INFORMAZIONI" not in out


@pytest.mark.parametrize(("fatigue", "shown"), [(0.5, False), (0.51, True), (0.1, False)])
def test_fatigue_warning_only_above_threshold(fatigue: float, shown: bool) -> None:
    assert ("SEGNALI DI FATICA" in format_for_prompt(_mem(fatigue=fatigue))) is shown


def test_each_tone_has_an_instruction() -> None:
    texts = {format_for_prompt(_mem(tone=t)) for t in Tone}
    assert len(texts) == len(Tone)


def test_empty_memory_gives_empty_block() -> None:
    assert format_for_prompt(ConversationMemory("c", "u")) == ""


def test_unknown_lang() -> None:
    with pytest.raises(InvalidInputError, match="lang"):
        format_for_prompt(_mem(), lang="fr")


def test_known_facts_tell_the_model_to_start_from_what_it_knows() -> None:
    """Seed 001's instruction under the known facts: don't ask again, and go deeper from what is known."""
    it = format_for_prompt(_mem(facts=(_fact(1, "L'utente si chiama Li Si"),)))
    assert ("⚠️ NON chiedere nuovamente informazioni su questi temi. Se devi approfondire, parti da quello che già "
            "sai.") in it.splitlines()
    en = format_for_prompt(_mem(facts=(_fact(1, "The user lives in Rome"),)), lang="en")
    assert "If you need to go deeper, start from what you already know." in en


def test_a_topic_with_no_covered_sub_goal_says_none_covered() -> None:
    """Seed 001's topic line always says what is covered: "(coperti: nessuno)" when nothing is yet."""
    mem = _mem(topics=(TopicState("cibo", "Cibo", Coverage.SHALLOW, (), ()),
                       TopicState("viaggio", "Viaggio", Coverage.DEEP, ("destinazione", "budget"), ())))
    lines = format_for_prompt(mem).splitlines()
    assert "- Cibo: shallow (coperti: nessuno)" in lines
    assert "- Viaggio: deep (coperti: destinazione, budget)" in lines
    assert "- Cibo: shallow (covered: none)" in format_for_prompt(mem, lang="en").splitlines()
