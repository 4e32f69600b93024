"""Choose the chat switch's ``LEXICAL_WEIGHT`` on LoCoMo's dev conversations (the first two; never the test ones).

    python eval/experiments/switch_lexical_weight.py [--sessions-only] [DATA_DIR]

Two dev settings, each scored with every candidate weight (``ChatStore.lexical_weight``; 0 = dense only, the switch
before lexical evidence):

- conversations: the dev conversations replayed into one user's chats exactly as ``memlab eval memory-recall
  --split dev`` does (packaged e5, extractive summaries, archived passages), each event of a conversation's
  ``event_summary`` a query (the evaluation's chat switch). Only two chats: every weight gets every query right.
- sessions: every session of the dev conversations is a chat of its own (one user, ~50 chats, many about the same
  people and topics), each event of a session a query for that session's chat: the hard case the switch meets when a
  user has many chats on neighbouring subjects.

Prints, per weight: switch decided right (named / names masked) and the decisions (right and wrong switches, ask,
none). Rule: the weight with the most right switches on sessions (named and masked together) among those making no
more wrong switches than weight 0, the smaller on a tie. The seed scenario (Tokyo vs Osaka) is a test in
``tests/test_seed_audit.py`` and plays no part in the choice.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

from memlab.eval.memory_recall import (
    _SWITCH_TIME,
    MemoryRecallTask,
    _Tally,
    _turn_text,
    build_memories,
    session_date,
)
from memlab.extraction import RuleExtractor

WEIGHTS = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--sessions-only"]
    task = MemoryRecallTask(data_dir=args[0] if args else None, split="dev")
    convs = task.samples(None, 0)
    task._convs = list(convs)
    if "--sessions-only" not in sys.argv:
        _conversations(task, convs)
    _sessions(task, convs)


def _conversations(task: MemoryRecallTask, convs: list) -> None:
    tally = _Tally()
    extractor = RuleExtractor()
    for conv in convs:
        _, chat_id, _ = build_memories(conv, task.chats, user_id=task.user, extractor=extractor)
        tally.chat_of[conv.sample_id] = chat_id
    task.chats.clock.now = _SWITCH_TIME
    print(f"dev conversations: {[c.sample_id for c in convs]}")
    for w in WEIGHTS:
        task.chats.lexical_weight = w
        tally.examples.clear()
        sw = task._chat_switch(tally)
        print(f"conversations, lexical_weight {w:<5}: switch decided right {sw['switch_accuracy']:.3f} (names masked "
              f"{sw['switch_accuracy_names_masked']:.3f}); top-1 {sw['top1']:.3f}; {sw['n_queries']} queries; "
              f"decisions {dict(sorted(sw['decisions'].items()))}", flush=True)



def _sessions(task: MemoryRecallTask, convs: list) -> None:
    """Every session of the dev conversations is a chat; each of its events a query for it."""
    user = "locomo-sessions"
    queries = []
    for conv in convs:
        for session in conv.sessions:
            turns = [{"role": "user" if t.speaker == conv.speaker_a else "model", "parts": [{"text": _turn_text(t)}]}
                     for t in session.turns if _turn_text(t)]
            events = [ev.strip() for evs in session.events.values() for ev in evs if ev.strip()]
            if not turns or not events:
                continue
            task.chats.clock.now = session_date(session)
            chat = task.chats.create(user, turns=turns)
            queries += [(chat.id, ev) for ev in events]
    task.chats.clock.now = _SWITCH_TIME
    names = sorted({n for c in convs for n in (c.speaker_a, c.speaker_b) if n}, key=len, reverse=True)
    mask = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    n_chats = len({cid for cid, _ in queries})
    best: tuple[int, float] | None = None
    wrong0 = None
    for w in WEIGHTS:
        task.chats.lexical_weight = w
        tally_w: Counter[str] = Counter()
        right = 0
        for variant in ("named", "masked"):
            for own, ev in queries:
                q = ev if variant == "named" else mask.sub("someone", ev)
                res = task.chats.search(user, q, k=3)
                outcome = res.decision if res.decision != "switch" else (
                    "switch_right" if res.chat_id == own else "switch_wrong")
                tally_w[f"{variant}:{outcome}"] += 1
                right += outcome == "switch_right"
        wrong = tally_w["named:switch_wrong"] + tally_w["masked:switch_wrong"]
        wrong0 = wrong if wrong0 is None else wrong0
        print(f"sessions ({n_chats} chats, {len(queries)} queries), lexical_weight {w:<5}: switch decided right "
              f"{tally_w['named:switch_right'] / len(queries):.3f} (names masked "
              f"{tally_w['masked:switch_right'] / len(queries):.3f}); {dict(sorted(tally_w.items()))}", flush=True)
        if wrong <= wrong0 and (best is None or right > best[0]):
            best = (right, w)
    print(f"chosen: lexical_weight {best[1] if best else 0.0}")


if __name__ == "__main__":
    main()
