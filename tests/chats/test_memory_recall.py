"""``memlab eval memory-recall`` on a tiny LoCoMo-format file (fake embedder for logic, real one for the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.chats import ChatStore, ExtractiveSummarizer
from memlab.datasets import load_locomo
from memlab.errors import InvalidInputError
from memlab.eval.memory_recall import (
    ReplayClock,
    build_memories,
    evaluate_memory_recall,
    run_memory_recall_task,
)
from memlab.eval.runs import load_run
from memlab.extraction import RuleExtractor
from memlab.store.db import Database
from memlab.testing import FakeEmbedder

FACTS_A = [
    "I adopted a dog named Rex on 3 May 2022.",
    "Nice! What breed is Rex?",
    "He is a beagle and he loves the park.",
    "I started a pottery class last Tuesday.",
    "Cool, do you like it?",
    "Yes, I made a blue bowl for my mom.",
    "I am moving to Denver in August.",
    "Why Denver?",
    "I got a job as a nurse at Denver Health.",
    "My sister Mia visits next week.",
    "Say hi to Mia!",
    "Sure, she is bringing her cat Luna.",
]
FACTS_B = [
    "I ran the Chicago marathon in 3 hours 40 minutes.",
    "Impressive! How long did you train?",
    "Six months, 50 km per week.",
    "My knee hurts a bit since then.",
    "See a physio soon.",
    "I booked one for Friday.",
]


def _sample(sid: str, a: str, b: str, texts: list[str], n_sessions: int) -> dict:
    conv: dict = {"speaker_a": a, "speaker_b": b}
    per = len(texts) // n_sessions
    events, obs = {}, {}
    for s in range(1, n_sessions + 1):
        chunk = texts[(s - 1) * per : s * per]
        conv[f"session_{s}"] = [
            {"speaker": a if i % 2 == 0 else b, "dia_id": f"D{s}:{i + 1}", "text": t}
            for i, t in enumerate(chunk)
        ]
        conv[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
        events[f"events_session_{s}"] = {
            a: [f"{a} talks about {chunk[0][:30]}"],
            b: [],
            "date": f"{s} May, 2023",
        }
        obs[f"session_{s}_observation"] = {a: [[chunk[0], f"D{s}:1"]]}
    qa = [
        {"question": f"What did {a} say first?", "answer": "x", "evidence": ["D1:1"], "category": 4},
        {"question": f"When did {a} mention it?", "answer": "x", "evidence": ["D2:1", "D2:3"], "category": 2},
        {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
        {"question": "Broken evidence?", "answer": "x", "evidence": ["D99:1"], "category": 1},
    ]
    return {
        "sample_id": sid,
        "conversation": conv,
        "event_summary": events,
        "observation": obs,
        "session_summary": {},
        "qa": qa,
    }


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    d = tmp_path / "locomo"
    d.mkdir()
    data = [_sample("conv-a", "Alice", "Bob", FACTS_A, 3), _sample("conv-b", "Carl", "Dana", FACTS_B, 2)]
    (d / "locomo10.json").write_text(json.dumps(data), encoding="utf-8")
    return d


def test_build_memories_keeps_provenance(locomo_dir: Path) -> None:
    conv = load_locomo(locomo_dir)[0]
    emb = FakeEmbedder(dim=32)
    chats = ChatStore(
        Database(":memory:"), emb, ExtractiveSummarizer(emb), summary_window_size=4, clock=ReplayClock()
    )
    memories, chat_id, stats = build_memories(conv, chats, user_id="u", extractor=RuleExtractor())
    all_ids = {t.dia_id for s in conv.sessions for t in s.turns}
    assert [u.dia_ids for u in memories["raw"]] == [frozenset({d}) for d in sorted(all_ids, key=_order)]
    assert memories["raw"][0].text == "Alice: " + FACTS_A[0]
    for name, units in memories.items():
        for u in units:
            assert u.dia_ids and u.dia_ids <= all_ids, (name, u)
    chat = chats.get(chat_id)
    assert stats["n_compactions"] > 0 and len(chat.assistant_history) == 4
    assert len(chat.full_history) == len(all_ids)
    kinds = {u.kind for u in memories["compacted"]}
    assert "summary" in kinds and "turn" in kinds
    n = len(memories["compacted_no_facts"])
    assert memories["compacted"][:n] == memories["compacted_no_facts"]
    brought = memories["compacted"][n:]  # the facts, each covering the turns the Assistant shows with it
    assert [(u.text, u.kind) for u in brought] == [(f.text, f.kind) for f in memories["facts"]]
    window = {d for u in memories["compacted_no_facts"] if u.kind == "turn" for d in u.dia_ids}
    for f, u in zip(memories["facts"], brought, strict=True):
        (turn,) = f.dia_ids
        if turn in window:
            assert u.dia_ids == f.dia_ids  # not archived: the model still sees the turn itself
            continue
        s, t = _order(turn)
        # two turns before and two after, never across a session, never beyond the archive
        assert turn in u.dia_ids and {_order(d)[0] for d in u.dia_ids} == {s}
        assert {_order(d)[1] for d in u.dia_ids} <= set(range(t - 2, t + 3)) and not u.dia_ids & window
    assert any(len(u.dia_ids) > 3 for u in brought)  # some fact brings the turns after its own
    assert memories["compacted_no_facts"][: len(memories["summary_only"])] == memories["summary_only"]
    # compacted turns are exactly the turns left in assistant_history
    assert sum(u.kind == "turn" for u in memories["compacted"]) == 3
    assert any("Rex" in u.text for u in memories["facts"])
    # every folded turn is archived in a passage of at most 3 turns of one session, dated with that session
    passages = [u for u in memories["compacted"] if u.kind == "passage"]
    folded = set(list(all_ids)) - {d for u in memories["compacted"] if u.kind == "turn" for d in u.dia_ids}
    assert {d for u in passages for d in u.dia_ids} == folded
    for u in passages:
        assert 1 <= len(u.dia_ids) <= 3 and len({d.split(":")[0] for d in u.dia_ids}) == 1
        session = int(next(iter(u.dia_ids)).split(":")[0][1:])
        assert u.text.startswith(f"[{session} May 2023] ")
    # facts carry their session's day
    rex = next(u for u in memories["facts"] if "Rex" in u.text)
    assert rex.text.startswith("[1 May 2023] ")


def _order(dia_id: str) -> tuple[int, int]:
    s, t = dia_id[1:].split(":")
    return int(s), int(t)


def test_evaluate_writes_a_run(locomo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = evaluate_memory_recall(
        out_dir=out, data_dir=locomo_dir, split="all", embedder=FakeEmbedder(dim=32), summary_window_size=4
    )
    loaded = load_run(out)
    m = loaded.metrics
    assert loaded.spec.task == "memory-recall" and loaded.spec.split == "all"
    assert m["n_conversations"] == 2
    assert m["n_questions"] == {"multi-hop": 0, "temporal": 2, "open-domain": 0, "single-hop": 2}
    assert m["n_questions_skipped_no_evidence"] == 2  # the broken-evidence items; category 5 is not counted
    # tiny conversations: top-10 covers almost everything, and raw turns cover every evidence turn
    assert m["evidence_coverage"]["raw"] == 1.0
    for name in ("raw", "facts", "compacted", "compacted_no_facts", "summary_only", "observations"):
        assert 0.0 <= m["evidence_recall@10"][name]["all"] <= m["evidence_coverage"][name] <= 1.0
        assert 0.0 <= m["dense"]["evidence_recall@10"][name]["all"] <= m["evidence_coverage"][name]
        for mode in ("hybrid", "dense"):
            r = m["recall_at"][mode][name]
            assert r["1"]["all"] <= r["5"]["all"] <= r["10"]["all"]
            assert 0.0 <= m["mrr"][mode][name] <= 1.0 and 0.0 < m["turns_in_top10"][mode][name] <= 1.0
        assert m["recall_at"]["hybrid"][name]["10"]["all"] == pytest.approx(m["evidence_recall@10"][name]["all"])
    assert m["retention_loss"]["recall@10_abs"] == pytest.approx(
        m["evidence_recall@10"]["raw"]["all"] - m["evidence_recall@10"]["compacted"]["all"]
    )
    assert m["chat_switch"]["n_queries"] == 5 and m["chat_switch"]["n_chats"] == 2
    cs = m["chat_switch"]
    for key in ("top1", "top1_names_masked", "switch_accuracy", "switch_accuracy_names_masked"):
        assert 0.0 <= cs[key] <= 1.0
    assert cs["switch_accuracy"] <= cs["top1"]  # a right switch is also a right top-1
    assert sum(cs["decisions"].values()) == cs["n_queries"]
    lines = (out / "examples.jsonl").read_text().splitlines()
    assert len(lines) == 4 * 6 + 5 * 2  # 4 questions x 6 memories + 5 events x 2 variants
    assert run.primary_metric == "evidence_recall@10.compacted.all"


def test_splits_limit_and_bad_parameters(locomo_dir: Path, tmp_path: Path) -> None:
    run = evaluate_memory_recall(
        out_dir=tmp_path / "r1",
        data_dir=locomo_dir,
        split="dev",
        limit=1,
        embedder=FakeEmbedder(dim=16),
        summary_window_size=4,
    )
    assert run.metrics["n_conversations"] == 1
    short = evaluate_memory_recall(
        out_dir=tmp_path / "r5",
        data_dir=locomo_dir,
        split="all",
        embedder=FakeEmbedder(dim=16),
        max_sessions=1,
    )
    assert short.metrics["n_questions_skipped_out_of_range"] == 2  # the temporal items need session 2
    assert short.metrics["n_questions"]["single-hop"] == 2 and short.metrics["chat_switch"]["n_queries"] == 2
    with pytest.raises(InvalidInputError):
        evaluate_memory_recall(out_dir=tmp_path / "r6", data_dir=locomo_dir, max_sessions=0)
    with pytest.raises(InvalidInputError):
        evaluate_memory_recall(out_dir=tmp_path / "r2", data_dir=locomo_dir, split="train")
    with pytest.raises(InvalidInputError):
        evaluate_memory_recall(out_dir=tmp_path / "r3", data_dir=locomo_dir, limit=0)
    with pytest.raises(InvalidInputError):
        run_memory_recall_task(out_dir=tmp_path / "r4", dataset="snli")


@pytest.mark.model
def test_cli_with_the_real_embedder(
    locomo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlab.cli.main import main

    out = tmp_path / "cli_run"
    code = main(
        [
            "eval",
            "memory-recall",
            "--dataset",
            "locomo",
            "--data-dir",
            str(locomo_dir),
            "--split",
            "all",
            "--window",
            "4",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "| compacted |" in printed and "chat switch top-1" in printed
    assert load_run(out).metrics["n_conversations"] == 2


def test_registered_for_the_suite() -> None:
    from memlab.eval.tasks import get_task

    assert get_task("memory-recall") is run_memory_recall_task


def test_an_empty_split_is_a_clear_error(locomo_dir: Path, tmp_path: Path) -> None:
    # the fixture holds two conversations: both are "dev", so "test" is empty (was a TypeError after a run was written)
    out = tmp_path / "run"
    with pytest.raises(InvalidInputError, match="the split 'test' is empty: the LoCoMo file holds 2"):
        evaluate_memory_recall(out_dir=out, data_dir=locomo_dir, split="test", embedder=FakeEmbedder(dim=32))
    assert not out.exists()


@pytest.mark.subprocess
def test_cli_empty_split_is_a_one_line_error(locomo_dir: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLAB_")}
    env.update(PYTHONPATH=str(root), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MEMLAB_LLM_BACKEND="none")
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "memlab.cli.main", "eval", "memory-recall", "--data-dir",
                           str(locomo_dir), "--split", "test", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "memlab: error: memory-recall: the split 'test' is empty: the LoCoMo file holds 2 conversation(s) "
        "(dev = the first 2, test = the others). Choose another --split."
    ]
    assert not out.exists()
