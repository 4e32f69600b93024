"""The LLM judge asks as the seed does: in the language of the two memories, whether they contradict each other,
which one is probably correct, and why."""

from __future__ import annotations

import json

from memlab.judges import LLMJudge
from memlab.llm import ScriptedLLM
from memlab.records import Label


def test_llm_judge_asks_in_the_users_language_which_memory_is_correct() -> None:
    answers = iter([
        '{"label": "contradiction", "confidence": 0.9, "reason": "due date diverse", "correct": "A"}',
        '{"label": "contradiction", "confidence": 0.8, "reason": "two cities", "correct": "both"}',
        '{"label": "neutral", "confidence": 0.7, "reason": "different events"}',  # an older answer: no `correct`
    ])
    llm = ScriptedLLM(lambda messages: next(answers))
    v = LLMJudge(llm).judge([("Sono nato il 12 luglio 1990.", "Il mio compleanno è il 15 agosto."),
                             ("I live in Rome.", "I live in Milan."),
                             ("My birthday is 12 July.", "Our anniversary is 15 August.")])
    it, en, _ = (call[0]["content"] for call in llm.calls)
    # Italian memories, the seed's Italian questions: contradiction yes/no, which one is correct, the reason
    assert it.startswith("Controlli la memoria") and "C'è una contraddizione (sì/no)?" in it
    assert "quale informazione è probabilmente corretta?" in it and "motivazione" in it
    assert en.startswith("You check the long-term memory") and "which one is probably correct" in en
    assert json.loads(llm.calls[0][1]["content"]) == {"statement_a": "Sono nato il 12 luglio 1990.",
                                                      "statement_b": "Il mio compleanno è il 15 agosto."}
    assert [x.label for x in v] == [Label.CONTRADICTION, Label.CONTRADICTION, Label.NEUTRAL]
    assert v[0].rationale == "due date diverse (probabilmente corretta: A)"
    assert v[1].rationale == "two cities (probably correct: both)"
    assert v[2].rationale == "different events" and abs(v[2].probability - 0.3) < 1e-9
    # a fixed language, whatever the statements
    fixed = ScriptedLLM(['{"label": "neutral", "confidence": 0.5, "reason": "x"}'])
    LLMJudge(fixed, lang="it").judge([("I live in Rome.", "I like tea.")])
    assert fixed.calls[0][0]["content"].startswith("Controlli la memoria")
