"""Choose the chat switch's ``LEXICAL_WEIGHT`` on LoCoMo's dev conversations (the first two; never the test ones).

    python eval/experiments/switch_lexical_weight.py [DATA_DIR]

Replays the dev conversations into one user's chats exactly as ``memlab eval memory-recall --split dev`` does
(packaged e5, extractive summaries, archived passages), then scores every event query of the chat-switch
evaluation with each candidate weight (``ChatStore.lexical_weight``; 0 = dense only, the switch before lexical
evidence). Prints, per weight: switch decided right (named / names masked), and the decisions (right and wrong
switches, ask, none). Rule: the largest weight whose dev switch accuracy (named and masked) is the best seen and
that makes no wrong switch more than weight 0; the seed scenario (Tokyo vs Osaka) is a test in
``tests/test_seed_audit.py`` and plays no part in the choice.
"""

from __future__ import annotations

import sys

from memlab.eval.memory_recall import _SWITCH_TIME, MemoryRecallTask, _Tally, build_memories
from memlab.extraction import RuleExtractor

WEIGHTS = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3)


def main() -> None:
    task = MemoryRecallTask(data_dir=sys.argv[1] if len(sys.argv) > 1 else None, split="dev")
    convs = task.samples(None, 0)
    task._convs = list(convs)
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
        print(f"lexical_weight {w:<5}: switch decided right {sw['switch_accuracy']:.3f} (names masked "
              f"{sw['switch_accuracy_names_masked']:.3f}); top-1 {sw['top1']:.3f}; {sw['n_queries']} queries; "
              f"decisions {dict(sorted(sw['decisions'].items()))}", flush=True)


if __name__ == "__main__":
    main()
