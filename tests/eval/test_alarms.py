"""``memlab eval alarms``: replaying conversations through the real turn flow, counting alarms, scoring plants."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlab.errors import DatasetFormatError, InvalidInputError
from memlab.eval.alarms import (
    AlarmsTask,
    Plant,
    _conversation_spread,
    load_plants,
    replay_conversation,
    run_alarms_task,
    user_id_of,
)
from memlab.testing import FakeEmbedder, ScriptedJudge

ALICE = [
    ("Alice", "I was born on 12 July 1990 in Rome."),
    ("Bob", "Nice, I love Rome."),
    ("Alice", "I have two cats named Luna and Sole."),
    ("Bob", "Cats are great."),
]
ALICE_LATER = [
    ("Alice", "We went hiking last Friday with my sister."),
    ("Bob", "Sounds fun!"),
]


def _conv(sid: str, sessions: list[list[tuple[str, str]]], dates: list[str]) -> dict:
    conv: dict = {"speaker_a": "Alice", "speaker_b": "Bob"}
    for s, (turns, date) in enumerate(zip(sessions, dates, strict=True), 1):
        conv[f"session_{s}"] = [{"speaker": who, "dia_id": f"D{s}:{i}", "text": t} for i, (who, t) in enumerate(turns, 1)]
        conv[f"session_{s}_date_time"] = date
    return {"sample_id": sid, "conversation": conv, "qa": []}


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    d = tmp_path / "locomo"
    d.mkdir()
    dates = ["1:00 pm on 8 May, 2023", "3:30 pm on 20 June, 2023"]
    data = [_conv(f"conv-{i}", [ALICE, ALICE_LATER], dates) for i in range(3)]
    (d / "locomo10.json").write_text(json.dumps(data), encoding="utf-8")
    return d


def _plants(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "plants.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return p


PLANT = {"conv": 0, "id": "p1", "speaker": "Alice", "after": "D2:1", "text": "My birthday is on 15 August.",
         "contradicts": "D1:1", "original": ALICE[0][1], "kind": "date", "label": "contradiction"}
DECOY = {"conv": 0, "id": "d1", "speaker": "Alice", "after": "D2:2", "text": "My flat is right next to the Colosseum.",
         "contradicts": "D1:1", "original": ALICE[0][1], "kind": "place", "label": "compatible"}


def test_replay_dates_every_memory_with_its_session(locomo_dir: Path) -> None:
    from memlab.datasets import load_locomo

    conv = load_locomo(locomo_dir)[0]
    rl = replay_conversation(conv, 0, embedder=FakeEmbedder(), judge=ScriptedJudge())
    assert rl.n_messages == 6 and rl.n_plants == 0
    assert set(rl.active_memories) == {"alice", "bob"}
    assert "D1:1" in rl.memories and "D2:1" in rl.memories


def test_relative_dates_resolve_against_the_message_time(tmp_path: Path) -> None:
    """'last Friday' said on 20 June 2023 is 16 June 2023, whatever today is."""
    from memlab.app import open_memlab

    with open_memlab(str(tmp_path / "t.db"), embedder=FakeEmbedder(), judge=ScriptedJudge()) as lab:
        r = lab.turn("alice", "I went hiking last Friday with my sister.", at=datetime(2023, 6, 20, 15, 30, tzinfo=UTC))
        m = lab.store.get(r.memory_ids[0], user_id="alice")
        assert m.created_at == datetime(2023, 6, 20, 15, 30, tzinfo=UTC)
        assert "16 June 2023" in m.text or "2023-06-16" in m.text
        turns = lab.chats.get(r.chat_id, user_id="alice").full_history
        assert turns  # the chat turn was written inside the same replayed time
        later = lab.turn("alice", "I live in Rome.")  # no `at`: the wall clock again
        assert lab.store.get(later.memory_ids[0], user_id="alice").created_at.year >= 2025


def test_turn_refuses_a_bad_time(tmp_path: Path) -> None:
    from memlab.app import open_memlab

    with open_memlab(str(tmp_path / "t.db"), embedder=FakeEmbedder(), judge=ScriptedJudge()) as lab:
        for bad in ("yesterday", 12, datetime(1066, 10, 14)):  # noqa: DTZ001
            with pytest.raises(InvalidInputError):
                lab.turn("alice", "I live in Rome.", at=bad)  # type: ignore[arg-type]
        assert lab.store.list("alice") == []  # nothing stored


def test_plants_are_caught_and_decoys_scored(locomo_dir: Path, tmp_path: Path) -> None:
    path = _plants(tmp_path, [PLANT, DECOY])
    run = run_alarms_task(split="dev", plants=path, data_dir=locomo_dir, embedder=FakeEmbedder(),
                          judge=ScriptedJudge(), out_dir=tmp_path / "run", limit=1)
    plants = run.metrics["plants"]
    assert plants["contradictions"] == 1 and plants["decoys"] == 1
    assert plants["recall"] == 1.0  # born 12 July vs birthday 15 August: the patterns level, HIGH
    assert plants["recall_high"] == 1.0
    assert plants["decoy_false_alarm_rate"] == 0.0
    assert plants["ci95"] == {"recall": [1.0, 1.0], "decoy_false_alarm_rate": [0.0, 0.0]}
    alarms = run.metrics["alarms"]
    assert alarms["messages"] == 6  # plants are not counted as the conversation's messages
    assert alarms["notifications"] == 0  # nothing else contradicts
    rows = [json.loads(x) for x in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    caught = [r for r in rows if r["id"] == "plant:p1"][0]
    assert caught["pred"] == "caught" and caught["meta"]["urgency"] == "high"


def test_natural_alarms_are_counted_per_100_messages(locomo_dir: Path, tmp_path: Path) -> None:
    # a judge that calls everything a contradiction: every compared pair of one person's memories alarms
    run = run_alarms_task(split="test", data_dir=locomo_dir, embedder=FakeEmbedder(),
                          judge=ScriptedJudge(default=0.99), out_dir=tmp_path / "run")
    a = run.metrics["alarms"]
    assert a["messages"] == 6
    assert a["notifications"] == sum(a["by_urgency"].values()) == sum(a["by_layer"].values())
    assert a["per_100"] == pytest.approx(100 * a["notifications"] / 6, abs=1e-3)
    assert run.spec.split == "test"
    # one conversation: its rate is the worst one and the whole interval (resampling one conversation moves nothing)
    assert a["worst_conversation_per_100"] == a["per_100"]
    assert a["ci95"]["per_100"] == [pytest.approx(a["per_100"], abs=1e-3)] * 2
    row = [ln for ln in run.to_markdown().splitlines() if ln.startswith("| alarms.per_100 ")]
    assert row and f"[{a['per_100']:.3f}, {a['per_100']:.3f}]" in row[0]
    lower = {m.name for m in run.metric_values() if not m.higher_is_better}
    assert {"per_100", "high_per_100", "worst_conversation_per_100"} <= lower


def test_rates_spread_over_conversations_not_messages() -> None:
    """The interval resamples whole conversations (one user each): two users at 1 and 5 per 100 give a pooled 3.0
    inside an interval that reaches neither further than the two users' own rates."""
    conv = {"messages": 100, "medium_per_100": 0.0, "low_per_100": 0.0}
    spread = _conversation_spread({"0": {**conv, "notifications": 1, "by_urgency": {"high": 1}, "per_100": 1.0,
                                         "high_per_100": 1.0},
                                   "1": {**conv, "notifications": 5, "by_urgency": {"medium": 5}, "per_100": 5.0,
                                         "high_per_100": 0.0}}, seed=0)
    assert spread["worst_conversation_per_100"] == 5.0
    lo, hi = spread["ci95"]["per_100"]
    assert lo == 1.0 and hi == 5.0  # a resample of two conversations can be either one twice
    assert spread["ci95"]["high_per_100"] == [0.0, 1.0]
    assert _conversation_spread({}, seed=0) == {}


def test_plants_file_errors(tmp_path: Path, locomo_dir: Path) -> None:
    with pytest.raises(DatasetFormatError):
        load_plants(tmp_path / "missing.jsonl")
    with pytest.raises(DatasetFormatError, match="missing"):
        load_plants(_plants(tmp_path, [{"conv": 0, "id": "x"}]))
    with pytest.raises(DatasetFormatError, match="duplicate"):
        load_plants(_plants(tmp_path, [PLANT, PLANT]))
    with pytest.raises(DatasetFormatError, match="dia_id"):
        load_plants(_plants(tmp_path, [{**PLANT, "after": "turn 4"}]))
    wrong = _plants(tmp_path, [{**PLANT, "speaker": "Bob"}])
    with pytest.raises(InvalidInputError, match="said by"):
        AlarmsTask(split="dev", plants=wrong, data_dir=locomo_dir).samples(None, 0)
    with pytest.raises(InvalidInputError):
        AlarmsTask(split="val")


def test_shipped_plants_point_at_real_turns() -> None:
    """The shipped plants files: every plant names real turns of its speaker (checked by the task itself)."""
    root = Path(__file__).resolve().parents[2] / "datasets" / "locomo_plants"
    for split in ("dev", "test"):
        plants = load_plants(root / f"{split}.jsonl")
        task = AlarmsTask(split=split, plants=root / f"{split}.jsonl")
        convs = task.samples(None, 0)
        assert {p.conv for p in plants} <= {i for i, _ in convs}
        contra = [p for p in plants if p.label == "contradiction"]
        assert len(contra) >= 30 and len(plants) - len(contra) >= 10
        assert len({p.kind for p in contra}) >= 5


def test_user_ids_of_speakers() -> None:
    assert user_id_of("Caroline") == "caroline"
    assert user_id_of("Jean-Luc Picard") == "jean_luc_picard"
    assert user_id_of("???") == "speaker"
    assert Plant(0, "x", "A", "D2:1", "t", "D1:1").label == "contradiction"


def test_a_decoy_contradicting_another_plant_is_not_a_false_alarm(locomo_dir: Path, tmp_path: Path) -> None:
    # the decoy agrees with the conversation (born 12 July) but contradicts the planted birthday line: the alarm
    # between the two planted lines is neither the plant's catch nor the decoy's false alarm
    decoy = {**DECOY, "after": "D2:2", "text": "My birthday is on 12 July, as always."}
    run = run_alarms_task(split="dev", plants=_plants(tmp_path, [PLANT, decoy]), data_dir=locomo_dir,
                          embedder=FakeEmbedder(), judge=ScriptedJudge(), out_dir=tmp_path / "run", limit=1)
    rows = [json.loads(x) for x in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    mem = {r["id"]: set(r["meta"]["plant_memories"]) for r in rows if r["id"].startswith("plant:")}
    between = [r for r in rows if not r["id"].startswith("plant:") and r["pred"] in ("high", "medium")
               and set(r["meta"]["memory_ids"]) & mem["plant:p1"] and set(r["meta"]["memory_ids"]) & mem["plant:d1"]]
    assert between, "the two planted birthdays should clash"
    assert run.metrics["plants"]["decoy_false_alarm_rate"] == 0.0
    assert run.metrics["plants"]["recall"] == 1.0  # the plant is still caught against the original turn


def test_overview_plot_draws_the_runs_own_numbers(locomo_dir: Path, tmp_path: Path) -> None:
    from memlab.eval import plots
    from memlab.eval.runs import load_run

    path = _plants(tmp_path, [PLANT, DECOY])
    run_alarms_task(split="dev", plants=path, data_dir=locomo_dir, embedder=FakeEmbedder(),
                    judge=ScriptedJudge(default=0.99), out_dir=tmp_path / "run", limit=2)
    run = load_run(tmp_path / "run")
    fig = plots.alarms_overview(run)
    convs = run.metrics["alarms"]["per_conversation"]
    bars = {t.name: t for t in fig.data}
    for urgency in ("high", "medium", "low"):
        assert list(bars[urgency.upper()].y) == [c[f"{urgency}_per_100"] for c in convs.values()]
    assert list(bars["HIGH"].x) == [c["sample_id"] for c in convs.values()]
    for c in convs.values():  # the three urgencies are the whole count
        assert c["high_per_100"] + c["medium_per_100"] + c["low_per_100"] == pytest.approx(c["per_100"], abs=2e-3)
    lo, hi = run.metrics["alarms"]["ci95"]["per_100"]  # the interval over conversations is in the title
    assert f"95% {lo:.2f}–{hi:.2f} over conversations" in fig.layout.annotations[0].text
    kind = run.metrics["plants"]["by_kind"]["date"]
    assert bars["caught"].y[0] + bars["missed"].y[0] == kind["n"] and bars["caught"].y[0] == kind["caught"]
    with pytest.raises(InvalidInputError, match="Not an alarms run"):
        plots.alarms_overview({"accuracy": 1.0})


def test_plants_beyond_the_replayed_sessions_are_left_out(locomo_dir: Path, tmp_path: Path) -> None:
    # PLANT is said in session 2: replaying one session cannot catch or miss it
    path = _plants(tmp_path, [PLANT, {**DECOY, "after": "D1:2", "id": "d0"}])
    run = run_alarms_task(split="dev", plants=path, data_dir=locomo_dir, embedder=FakeEmbedder(),
                          judge=ScriptedJudge(), out_dir=tmp_path / "run", limit=1, max_sessions=1)
    plants = run.metrics["plants"]
    assert plants["contradictions"] == 0 and plants["decoys"] == 1 and run.spec.params["n_plants"] == 1
    assert plants["recall"] is None


def test_replays_inside_a_running_event_loop(locomo_dir: Path, tmp_path: Path) -> None:
    # a Jupyter cell runs in the kernel's loop, where a bare asyncio.run refuses to start
    import asyncio

    async def cell() -> Any:
        return run_alarms_task(split="dev", plants=_plants(tmp_path, [PLANT]), data_dir=locomo_dir,
                               embedder=FakeEmbedder(), judge=ScriptedJudge(), out_dir=tmp_path / "run", limit=1)

    assert asyncio.run(cell()).metrics["plants"]["recall"] == 1.0


def test_progress_ticks_once_per_replayed_message(locomo_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = run_alarms_task(split="dev", plants=_plants(tmp_path, [PLANT]), data_dir=locomo_dir, embedder=FakeEmbedder(),
                          judge=ScriptedJudge(), out_dir=tmp_path / "run", limit=1, progress=True)
    err = capsys.readouterr().err
    assert run.metrics["alarms"]["messages"] == 6 and "alarms: replay" in err
    assert "7/7" in err  # the conversation's 6 messages and the planted line, counted before the replay
