"""Summarisers: extractive selection, provenance, budgets, languages; the LLM summariser's prompt and fallback."""

from __future__ import annotations

import pytest

from memlab.chats import ExtractiveSummarizer, LLMSummarizer, Passage, Summary, split_sentences
from memlab.errors import InvalidInputError, LLMError
from memlab.testing import FakeEmbedder


@pytest.fixture
def summarizer() -> ExtractiveSummarizer:
    return ExtractiveSummarizer(FakeEmbedder(dim=32, bag_of_words=True), fact_scorer=None)


def test_split_sentences_latin_cjk_and_long() -> None:
    assert split_sentences("Ciao. Parto il 3 maggio! Vieni?") == ["Ciao.", "Parto il 3 maggio!", "Vieni?"]
    assert split_sentences("我下个月去东京。你呢？") == ["我下个月去东京。", "你呢？"]
    long = split_sentences("parola " * 200, max_chars=100)
    assert len(long) == 1 and len(long[0]) <= 101 and long[0].endswith("…")
    assert split_sentences("  \n ") == []


def test_keeps_facts_verbatim_and_drops_fillers(summarizer: ExtractiveSummarizer) -> None:
    passages = [
        Passage("Ciao! Come va?", "user", (0,)),
        Passage("Ok grazie.", "model", (1,)),
        Passage("Mi chiamo Giulia Bianchi e sono nata il 12 luglio 1990 a Torino.", "user", (2,)),
        Passage("Abbiamo deciso di spostare la riunione a venerdì 14 alle 15:30.", "model", (3,)),
        Passage("Va bene.", "user", (4,)),
    ]
    out = summarizer.summarize(passages, max_chars=400)
    assert "[user] Mi chiamo Giulia Bianchi e sono nata il 12 luglio 1990 a Torino." in out.text
    assert "[model] Abbiamo deciso di spostare la riunione a venerdì 14 alle 15:30." in out.text
    assert "Ok grazie" not in out.text and "Va bene" not in out.text
    assert set(out.sources) == {2, 3}
    # chronological order
    assert out.text.index("Giulia") < out.text.index("riunione")


def test_budget_is_respected_and_one_sentence_always_kept(summarizer: ExtractiveSummarizer) -> None:
    passages = [
        Passage(
            f"Il giorno {i} Marco ha speso {i * 10} euro a Roma per il progetto numero {i}.", "user", (i,)
        )
        for i in range(40)
    ]
    out = summarizer.summarize(passages, max_chars=300)
    assert 0 < len(out.text) <= 300
    tiny = summarizer.summarize(passages, max_chars=5)
    assert len(tiny.sentences) == 1


def test_deterministic_and_empty(summarizer: ExtractiveSummarizer) -> None:
    passages = [Passage(f"Frase {i} su Milano e il {i} giugno.", "user", (i,)) for i in range(10)]
    assert summarizer.summarize(passages, max_chars=200) == summarizer.summarize(passages, max_chars=200)
    empty = summarizer.summarize([], max_chars=100)
    assert empty == Summary("", (), "extractive") and empty.best_sentence == ""


def test_prior_summary_sentences_keep_their_provenance(summarizer: ExtractiveSummarizer) -> None:
    prior = [Passage("Anna vive a Firenze dal 2019.", "user", (0, 3), prior=True)]
    new = [Passage("Il volo per Parigi parte il 5 giugno alle 8.", "model", (10,))]
    out = summarizer.summarize(prior + new, max_chars=500)
    by_text = {s.text: s.sources for s in out.sentences}
    assert by_text["Anna vive a Firenze dal 2019."] == (0, 3)
    assert by_text["Il volo per Parigi parte il 5 giugno alle 8."] == (10,)


def test_theme_style_has_no_role_tags(summarizer: ExtractiveSummarizer) -> None:
    out = summarizer.summarize(
        [Passage("Sto pianificando un viaggio a Tokyo ad aprile.", "user", (0,))],
        max_chars=200,
        style="theme",
    )
    assert out.text == "Sto pianificando un viaggio a Tokyo ad aprile."


def test_chinese_text(summarizer: ExtractiveSummarizer) -> None:
    out = summarizer.summarize(
        [Passage("你好。我叫李四，我1990年7月12日出生在北京。", "user", (0,))], max_chars=100
    )
    assert "我叫李四，我1990年7月12日出生在北京。" in out.text


def test_fact_scorer_boosts_fact_sentences() -> None:
    seen: list[str] = []

    def is_fact(s: str) -> bool:
        seen.append(s)
        return "nata" in s

    s = ExtractiveSummarizer(FakeEmbedder(dim=32), fact_scorer=is_fact, mmr_lambda=1.0)
    passages = [
        Passage("Domani piove molto forte su tutta la regione.", "user", (0,)),
        Passage("Sono nata a Bari nel paese dei miei nonni.", "user", (1,)),
    ]
    out = s.summarize(passages, max_chars=50)
    assert out.sentences[0].text.startswith("Sono nata") and seen
    assert s.get_params()["fact_scorer"] == "is_fact"


@pytest.mark.parametrize("kw", [{"mmr_lambda": 2.0}, {"max_sentence_chars": 5}])
def test_bad_parameters(kw: dict) -> None:
    with pytest.raises(InvalidInputError):
        ExtractiveSummarizer(FakeEmbedder(), **kw)


def test_bad_inputs(summarizer: ExtractiveSummarizer) -> None:
    with pytest.raises(InvalidInputError):
        summarizer.summarize([Passage("a b c d", "user")], max_chars=0)
    with pytest.raises(InvalidInputError):
        summarizer.summarize(["testo"], max_chars=100)  # type: ignore[list-item]


class ScriptedLLM:
    name = "scripted"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.messages: list[list[dict]] = []

    def chat(self, messages):
        self.messages.append(list(messages))
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    def structured(self, messages, schema):  # pragma: no cover - not used
        raise NotImplementedError


def test_llm_summarizer_prompt_and_provenance() -> None:
    llm = ScriptedLLM("Anna vive a Firenze; il volo per Parigi parte il 5 giugno.")
    s = LLMSummarizer(llm)
    out = s.summarize(
        [
            Passage("Anna vive a Firenze.", "user", (0, 1), prior=True),
            Passage("Il volo parte il 5 giugno.", "model", (7,)),
        ],
        max_chars=300,
    )
    system, user = llm.messages[0]
    assert system["role"] == "system" and "consolidated truth" in system["content"]
    assert "Never invent" in system["content"] and "300" in system["content"]
    assert user["content"].startswith("EARLIER SUMMARY (consolidated truth):\n[user] <passage>Anna vive a Firenze.")
    assert "NEW TURNS:\n[model] <passage>Il volo parte il 5 giugno.</passage>" in user["content"]
    assert out.text == llm.reply and out.sources == (0, 1, 7) and out.summarizer == "llm:scripted"


def test_llm_summarizer_clips_and_falls_back() -> None:
    long = " ".join(f"Frase numero {i}." for i in range(100))
    assert (
        len(LLMSummarizer(ScriptedLLM(long)).summarize([Passage("x y z", "user", (0,))], max_chars=100).text)
        <= 150
    )
    for reply in (LLMError("500"), "   "):
        with pytest.raises(LLMError):
            LLMSummarizer(ScriptedLLM(reply)).summarize(
                [Passage("Parto il 3 maggio.", "user", (0,))], max_chars=100
            )
        fb = LLMSummarizer(
            ScriptedLLM(reply), fallback=ExtractiveSummarizer(FakeEmbedder(), fact_scorer=None)
        )
        out = fb.summarize([Passage("Parto per Tokyo il 3 maggio.", "user", (0,))], max_chars=100)
        assert out.text == "[user] Parto per Tokyo il 3 maggio." and fb.n_fallbacks == 1
    assert LLMSummarizer(ScriptedLLM("x")).summarize([], max_chars=10).text == ""
