"""``memlab chat``, ``memlab notifications``, ``memlab resolve`` and ``memlab bench agent``.

Each invocation is one process: it opens the SQLite file (memories, notifications, chats and the agent's
queue live in it), does its work and exits. ``memlab chat`` starts the background agent, which first runs
any check left in the queue by an earlier process (``--no-wait``, a crash), runs one turn, then waits for
that turn's checks before exiting (``--no-wait`` skips the wait: the checks stay queued for the next run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from memlab.errors import NotFoundError
from memlab.text import LANGS, messages

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``chat``, ``notifications``, ``resolve`` and ``bench agent`` to the parser."""
    top = groups["top"]
    p = top.add_parser("chat", help="run one assistant turn (notifications, extraction, background checks, reply)")
    _common(p)
    p.add_argument("--message", required=True, help="the user's message")
    p.add_argument("--chat", default=None, help="chat id (default: the user's most recent chat, created if none)")
    p.add_argument("--json", action="store_true", help="print the response as JSON")
    p.add_argument("--no-wait", action="store_true", help="do not wait for this turn's background checks")
    p.add_argument("--timeout", type=float, default=600.0, help="max seconds to wait for the checks (default 600)")
    p.add_argument("--judge", default=None, help="judge name (default: settings, 'default')")
    p.add_argument("--at", default=None,
                   help="when the message was said, ISO 8601 (e.g. 2023-05-08T13:56:00, naive = UTC; default now): "
                        "its relative dates ('last Friday'), memories and notifications take this time, so a "
                        "logged conversation replays as it was said")
    p.set_defaults(func=_chat)

    p = top.add_parser("notifications", help="list a user's pending notifications")
    _common(p)
    p.add_argument("--all", action="store_true", help="include resolved and dismissed ones")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_notifications)

    p = top.add_parser("resolve", help="answer a notification (contradictions: A, B, C or D)")
    _common(p)
    p.add_argument("--notification", type=int, required=True, help="notification id")
    p.add_argument("--choice", type=str.upper, choices=["A", "B", "C", "D"], default=None,
                   help="A keep the first, B keep the second, C both correct (with --note), D delete both")
    p.add_argument("--note", default=None, help="the context (for C: why both are true)")
    p.add_argument("--undo", action="store_true", help="revert the notification's resolution instead")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_resolve)

    p = groups["bench"].add_parser("agent", help="ingest latency with vs without background checks running")
    p.add_argument("--messages", type=int, default=200, help="messages ingested per run (default 200)")
    p.add_argument("--embedder", default=None, help="embedder name (default: settings)")
    p.add_argument("--judge", default=None, help="judge name (default: settings)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    p.set_defaults(func=_bench)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite file (memories, chats, notifications, agent queue)")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--lang", choices=list(LANGS), default=None, help="language of notification texts (default: MEMLAB_LANG if set, else each user's own, detected from their messages)")
    p.add_argument("--embedder", default=None, help="embedder (default: the one the database was built with)")
    p.add_argument("--reembed", action="store_true",
                   help="allow --embedder to differ from the database's: re-embed every memory and switch for good")


def _settings() -> Any:
    from memlab.config import Settings

    return Settings()


def open_store(db_path: str, embedder: str | None, settings: Any, *, reembed: bool = False) -> Any:
    """Open the store with the embedder it was built with (never silently re-embeds)."""
    from memlab.app import stored_embedder_name
    from memlab.embedding import resolve_embedder
    from memlab.store import MemoryStore

    emb = resolve_embedder(embedder or stored_embedder_name(db_path), settings=settings)
    return MemoryStore(db_path, embedder=emb, max_text_chars=settings.max_text_chars, reembed=reembed)


def _need_db(path: str) -> None:
    if not Path(path).exists():
        raise NotFoundError(f"No database at {path!r}.")


def _chat(args: argparse.Namespace) -> int:
    return asyncio.run(_chat_async(args))


async def _chat_async(args: argparse.Namespace) -> int:
    from memlab._validation import check_positive_float
    from memlab.app import open_memlab
    from memlab.clock import check_time

    check_positive_float(args.timeout, name="--timeout", owner="memlab chat")  # before the database is opened
    at = check_time(args.at, name="--at", owner="memlab chat")
    lab = open_memlab(args.db, settings=_settings(), embedder=args.embedder, judge=args.judge, lang=args.lang,
                      reembed=args.reembed)
    try:
        resp, done = await lab.turn_async(args.user, args.message, chat_id=args.chat, wait=not args.no_wait,
                                          timeout=args.timeout, at=at)
        if not done:
            print(f"memlab: warning: checks still running after {args.timeout:.0f}s; they stay queued",
                  file=sys.stderr)
        count = resp.notifications_count  # the badge after this turn's checks
        if args.json:
            print(json.dumps(resp.model_dump(), ensure_ascii=False, indent=2))
        else:
            print(resp.response)
            if count:
                print(f"\n🔔 {count}")
    finally:
        lab.close()
    return 0


def _notifications(args: argparse.Namespace) -> int:
    from memlab.notify import NotificationService, format_notification
    from memlab.store import Database

    _need_db(args.db)
    lang = args.lang or _settings().lang
    db = Database(args.db)
    try:
        svc = NotificationService(db)
        items = svc.list(args.user, include_resolved=True) if args.all else svc.pending(args.user)
        if args.json:
            print(json.dumps({"user_id": args.user, "count": svc.count(args.user),
                              "notifications": [n.to_dict() for n in items]}, ensure_ascii=False, indent=2))
        else:
            if not items:
                print(messages(lang)["no_notifications"])
            for n in items:
                print(f"#{n.id} [{n.urgency.value}] {n.type.value} ({n.status.value})")
                print("  " + format_notification(n, lang).replace("\n", "\n  "))
    finally:
        db.close()
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from memlab.errors import InvalidInputError
    from memlab.notify import NotificationService, format_resolution

    _need_db(args.db)
    settings = _settings()
    lang = args.lang or settings.lang
    if not args.undo and args.choice is None:
        raise InvalidInputError("memlab resolve needs --choice A|B|C|D (or --undo).")
    store = open_store(args.db, args.embedder, settings, reembed=args.reembed)
    try:
        svc = NotificationService(store)
        if args.undo:
            n = svc.undo(args.notification, user_id=args.user)
            text = messages(lang)["undone"]
        else:
            n = svc.resolve(args.notification, args.choice, args.note, user_id=args.user)
            text = format_resolution(n, lang) if n.type.value == "contradiction" else f"#{n.id}: {n.choice}"
        if args.json:
            out = n.to_dict()
            out["memories"] = [
                {"id": m.id, "text": m.text, "is_active": m.is_active, "context": m.context,
                 "history": [{"event": e.event, "actor": e.actor, "at": e.at.isoformat(), "details": dict(e.details)}
                             for e in store.events(m.id, user_id=args.user, chain=False)]}
                for m in (store.get(i, user_id=args.user) for i in n.memory_ids)
            ]
            print(json.dumps(out, ensure_ascii=False, indent=2))
        else:
            print(text)
            for i in n.memory_ids:
                m = store.get(i, user_id=args.user)
                state = "attiva" if m.is_active else "inattiva"
                if lang != "it":
                    state = "active" if m.is_active else "inactive"
                print(f"  [{i}] {state}: {m.text}" + (f" ({m.context})" if m.context else ""))
    finally:
        store.close()
    return 0


def _bench(args: argparse.Namespace) -> int:
    from memlab.lab.bench.agent import run_agent_bench

    res = run_agent_bench(n_messages=args.messages, embedder=args.embedder, judge=args.judge, seed=args.seed,
                          out=args.out)
    print(res.to_markdown())
    return 0
