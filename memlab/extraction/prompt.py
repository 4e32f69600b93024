"""``format_for_prompt``: the conversation memory as a block of the assistant's system prompt."""

from __future__ import annotations

from memlab.errors import InvalidInputError
from memlab.extraction.records import ConversationMemory, Tone
from memlab.prompting import quote_data

__all__ = ["FATIGUE_WARNING_THRESHOLD", "MIN_PROMPT_CONFIDENCE", "format_for_prompt"]

#: Facts below this confidence are not listed as known.
MIN_PROMPT_CONFIDENCE = 0.6
#: Above this fatigue score the block carries the fatigue warning.
FATIGUE_WARNING_THRESHOLD = 0.5

_TEXT = {
    "it": {
        "facts": "## INFORMAZIONI GIÀ RACCOLTE",
        "facts_note": "⚠️ NON chiedere nuovamente informazioni su questi temi. Se devi approfondire, parti da quello "
                      "che già sai.",
        "topics": "## TOPIC GIÀ DISCUSSI",
        "covered": "coperti",
        "none": "nessuno",
        "missing": "mancanti",
        "unanswered": "## AREE SENZA RISPOSTA",
        "attempts": "tentativi",
        "skipped": "saltata",
        "fatigue": "## ⚠️ ATTENZIONE: SEGNALI DI FATICA",
        "fatigue_score": "Livello di fatica dell'utente: {score:.2f}",
        "fatigue_tips": ("Fai domande più brevi e dirette", "Considera di saltare approfondimenti non essenziali",
                         "Valuta se concludere prima del previsto"),
        "style": "## STILE COMUNICATIVO RILEVATO",
        Tone.FORMAL: "L'utente usa un registro formale: rispondi in modo formale e cortese (dai del Lei).",
        Tone.CASUAL: "L'utente usa un tono informale: rispondi in modo amichevole e colloquiale.",
        Tone.BRIEF: "L'utente risponde in modo breve: fai una domanda alla volta, concisa.",
        Tone.VERBOSE: "L'utente scrive risposte lunghe e dettagliate: puoi approfondire.",
        "emoji_yes": "L'utente usa le emoji: puoi usarne qualcuna.",
        "emoji_no": "L'utente non usa emoji: evitale.",
        "avg_len": "Lunghezza media delle risposte dell'utente: {n:.0f} caratteri.",
    },
    "en": {
        "facts": "## INFORMATION ALREADY COLLECTED",
        "facts_note": "⚠️ Do NOT ask again about these topics. If you need to go deeper, start from what you "
                      "already know.",
        "topics": "## TOPICS ALREADY DISCUSSED",
        "covered": "covered",
        "none": "none",
        "missing": "missing",
        "unanswered": "## UNANSWERED AREAS",
        "attempts": "attempts",
        "skipped": "skipped",
        "fatigue": "## ⚠️ WARNING: SIGNS OF FATIGUE",
        "fatigue_score": "User fatigue level: {score:.2f}",
        "fatigue_tips": ("Ask shorter, more direct questions", "Consider skipping non-essential follow-ups",
                         "Consider wrapping up earlier than planned"),
        "style": "## DETECTED COMMUNICATION STYLE",
        Tone.FORMAL: "The user writes formally: answer formally and politely.",
        Tone.CASUAL: "The user writes casually: answer in a friendly, conversational way.",
        Tone.BRIEF: "The user answers briefly: ask one short question at a time.",
        Tone.VERBOSE: "The user writes long, detailed answers: you can go deeper.",
        "emoji_yes": "The user uses emoji: you may use a few.",
        "emoji_no": "The user does not use emoji: avoid them.",
        "avg_len": "Average length of the user's answers: {n:.0f} characters.",
    },
}


def format_for_prompt(
    memory: ConversationMemory,
    lang: str = "it",
    *,
    min_confidence: float = MIN_PROMPT_CONFIDENCE,
    fatigue_threshold: float = FATIGUE_WARNING_THRESHOLD,
) -> str:
    """Render the memory as prompt sections (Italian headings; English with ``lang="en"``).

    Sections, each only when it has content: known facts (active, confidence >= ``min_confidence``, with
    the instruction not to ask again), topics discussed (coverage and sub-goals), unanswered areas, a fatigue
    warning (fatigue > ``fatigue_threshold``), and the detected communication style (tone, emoji).

    Args:
        memory: a :class:`ConversationMemory`.
        lang: ``it`` (default) or ``en``.
        min_confidence: lowest confidence listed as known.
        fatigue_threshold: fatigue above which the warning appears.

    Returns:
        The block (``""`` when there is nothing to say).

    Raises:
        InvalidInputError: unknown ``lang``.

    Example:
        >>> mem = ConversationMemory("c1", "u1", fatigue=0.62, tone=Tone.BRIEF)
        >>> print(format_for_prompt(mem).splitlines()[0])
        ## ⚠️ ATTENZIONE: SEGNALI DI FATICA
    """
    if lang not in _TEXT:
        raise InvalidInputError(f"The 'lang' parameter of format_for_prompt must be one of ['en', 'it']. Got {lang!r} instead.")
    t = _TEXT[lang]
    out: list[str] = []
    facts = [f for f in memory.facts if f.is_active and f.confidence >= min_confidence]
    if facts:
        out += [str(t["facts"]), str(t["facts_note"])]
        seen: set[str] = set()
        for f in facts:
            if f.content.casefold() in seen:
                continue
            seen.add(f.content.casefold())
            out.append(f"- {quote_data(f.content)}")  # the user's words: in the prompt's data form
        out.append("")
    if memory.topics:
        out.append(str(t["topics"]))
        for tp in memory.topics:
            # the seed's line: "label: coverage (coperti: a, b)", "(coperti: nessuno)" when no sub-goal is covered
            line = f"- {tp.label}: {tp.coverage.value} ({t['covered']}: {', '.join(tp.covered) or t['none']})"
            if tp.missing:
                line += f" [{t['missing']}: {', '.join(tp.missing)}]"
            out.append(line)
        out.append("")
    if memory.unanswered:
        out.append(str(t["unanswered"]))
        for a in memory.unanswered:
            prio = a.priority.value if hasattr(a.priority, "value") else a.priority
            line = f"- {a.area} (priorità {prio}" if lang == "it" else f"- {a.area} (priority {prio}"
            line += f", {t['attempts']}: {a.attempts})"
            if a.skip_reason:
                line += f" — {t['skipped']}: {getattr(a.skip_reason, 'value', a.skip_reason)}"
            out.append(line)
        out.append("")
    if memory.fatigue > fatigue_threshold:
        out += [str(t["fatigue"]), str(t["fatigue_score"]).format(score=memory.fatigue)]
        out += [f"- {tip}" for tip in t["fatigue_tips"]]
        out.append("")
    if memory.tone is not None or memory.n_messages:
        out.append(str(t["style"]))
        if memory.tone is not None:
            out.append(f"- {t[memory.tone]}")
        if memory.n_messages:
            out.append(f"- {t['emoji_yes'] if memory.emoji_used else t['emoji_no']}")
            out.append(f"- {str(t['avg_len']).format(n=memory.avg_response_length)}")
        out.append("")
    return "\n".join(out).strip()
