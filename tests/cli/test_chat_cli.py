"""The issue-7 acceptance, run through the real CLI: every command is a new process on one SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _judge() -> str:
    """memlab's trained default judge when its weights are in the tree, else the lexical baseline."""
    return "default" if (ROOT / "memlab/judges/weights/default/judge.json").exists() else "lexical"


def memlab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLAB_")}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MEMLAB_JUDGE=_judge(),
               MEMLAB_LLM_BACKEND="none")  # no model: the "(nessun modello configurato)" marker is asserted
    proc = subprocess.run([sys.executable, "-m", "memlab.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.model  # runs a real model in a subprocess
def test_acceptance_birthday_contradiction(tmp_path):
    db = str(tmp_path / "m.db")
    memlab("chat", "--db", db, "--user", "u1", "--message", "Sono nato il 12 luglio 1990")
    memlab("chat", "--db", db, "--user", "u1", "--message", "Il mio compleanno è il 15 agosto")
    out = json.loads(memlab("chat", "--db", db, "--user", "u1", "--message", "Che ore sono?", "--json").stdout)
    resp = out["response"]
    assert resp.startswith("[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto "
                           "«Sono nato il 12 luglio 1990», ma ora mi dici «Il mio compleanno è il 15 agosto».\n")
    assert "\n[⚠️ CONTRADDIZIONE RILEVATA]\nHo notato una contraddizione nella memoria:\n" in resp
    block = resp.split("\n\n")[0]
    for needle in ("12 luglio 1990", "15 agosto", "Quale informazione è corretta?", "- A) La prima", "- B) La seconda",
                   "- C) Entrambe sono corrette (spiega il contesto)", "- D) Cancella entrambe"):
        assert needle in block
    assert resp.endswith("(nessun modello configurato)")
    assert out["notifications_count"] >= 1
    high = out["high_urgency_notifications"]
    nid = next(n["id"] for n in high if "12 luglio" in n["payload"]["first"]["text"] + n["payload"]["second"]["text"])

    other = json.loads(memlab("chat", "--db", db, "--user", "u2", "--message", "ciao", "--json").stdout)
    assert other["notifications_count"] == 0 and "[⚠️" not in other["response"]
    listed = json.loads(memlab("notifications", "--db", db, "--user", "u2", "--json").stdout)
    assert listed == {"user_id": "u2", "count": 0, "notifications": []}

    # another user cannot resolve it
    denied = memlab("resolve", "--db", db, "--user", "u2", "--notification", str(nid), "--choice", "B", check=False)
    assert denied.returncode == 1 and "No notification" in denied.stderr

    res = json.loads(memlab("resolve", "--db", db, "--user", "u1", "--notification", str(nid), "--choice", "A",
                            "--json").stdout)
    assert res["status"] == "resolved" and res["choice"] == "A"
    mems = {("luglio" if "luglio" in m["text"] else "agosto"): m for m in res["memories"]}
    assert mems["luglio"]["is_active"] is True and mems["agosto"]["is_active"] is False
    for m in mems.values():
        resolved = [e for e in m["history"] if e["event"] == "contradiction_resolved"]
        assert resolved and resolved[0]["actor"] == "user:u1" and resolved[0]["details"]["choice"] == "A"

    pending = json.loads(memlab("notifications", "--db", db, "--user", "u1", "--json").stdout)
    assert nid not in [n["id"] for n in pending["notifications"]]
    # the answer is final and reversible
    undo = memlab("resolve", "--db", db, "--user", "u1", "--notification", str(nid), "--undo")
    assert "annullata" in undo.stdout


@pytest.mark.model  # runs a real model in a subprocess
def test_bad_input_and_unknown_ids(tmp_path):
    db = str(tmp_path / "m.db")
    bad = memlab("chat", "--db", db, "--user", "u1", "--message", "   ", "--no-wait", check=False)
    assert bad.returncode == 1 and "non-empty" in bad.stderr
    missing = memlab("notifications", "--db", str(tmp_path / "nope.db"), "--user", "u1", check=False)
    assert missing.returncode == 1 and "No database" in missing.stderr
    memlab("chat", "--db", db, "--user", "u1", "--message", "Abito a Roma.", "--no-wait")
    unknown = memlab("resolve", "--db", db, "--user", "u1", "--notification", "99", "--choice", "A", check=False)
    assert unknown.returncode == 1 and "No notification with id 99" in unknown.stderr
    nochoice = memlab("resolve", "--db", db, "--user", "u1", "--notification", "1", check=False)
    assert nochoice.returncode == 1 and "--choice" in nochoice.stderr
    text = memlab("notifications", "--db", db, "--user", "u1").stdout
    assert text.strip() == "(nessuna notifica)"


@pytest.mark.model  # runs a real model in a subprocess
@pytest.mark.slow
def test_no_wait_leaves_checks_queued_for_the_next_run(tmp_path):
    import sqlite3

    db = str(tmp_path / "m.db")
    memlab("chat", "--db", db, "--user", "u1", "--message", "Sono nato il 12 luglio 1990", "--no-wait")
    memlab("chat", "--db", db, "--user", "u1", "--message", "Il mio compleanno è il 15 agosto", "--no-wait")
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM agent_queue WHERE status = 'pending'").fetchone()[0] >= 2
    con.close()
    # the next (waiting) run first drains what the earlier processes left
    memlab("chat", "--db", db, "--user", "u1", "--message", "Buongiorno")
    out = json.loads(memlab("chat", "--db", db, "--user", "u1", "--message", "Che ore sono?", "--json").stdout)
    assert out["response"].startswith("[⚠️ IMPORTANTE] Ho rilevato una contraddizione")


@pytest.mark.model  # runs a real model in a subprocess
def test_at_replays_a_logged_message_at_its_own_time(tmp_path):
    import sqlite3

    db = str(tmp_path / "m.db")
    bad = memlab("chat", "--db", db, "--user", "u1", "--message", "Ciao", "--at", "l'8 maggio", check=False)
    assert bad.returncode == 1 and "'--at' parameter of memlab chat must be an ISO 8601" in bad.stderr
    assert not Path(db).exists()  # refused before the database is opened
    memlab("chat", "--db", db, "--user", "u1", "--message", "Last Friday I went to the car show with my brother.",
           "--at", "2023-05-08T13:56:00")
    con = sqlite3.connect(db)
    try:
        (text, created), = con.execute("SELECT text, created_at FROM memories").fetchall()
        turns = [t for (t,) in con.execute("SELECT created_at FROM chat_turns")]
    finally:
        con.close()
    assert "5 May 2023" in text and created == "2023-05-08T13:56:00+00:00"  # Friday before that Monday, not today's
    assert turns and set(turns) == {"2023-05-08T13:56:00+00:00"}
