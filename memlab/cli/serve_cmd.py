"""``memlab serve`` (the HTTP API), ``memlab users add|list|revoke`` (its API keys) and ``memlab bench serve``."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``serve``, ``users`` and ``bench serve`` to the parser."""
    p = groups["top"].add_parser("serve", help="serve the HTTP API (chats, memory, notifications, turn, /health)")
    _db(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8001, help="TCP port (default 8001)")
    p.add_argument("--embedder", default=None, help="embedder (default: the one the database was built with)")
    p.add_argument("--reembed", action="store_true",
                   help="allow --embedder to differ from the database's: re-embed every memory and switch for good")
    p.add_argument("--judge", default=None, help="judge name (default: settings)")
    p.add_argument("--no-checks", action="store_true", help="store memories without integrity checks")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_serve)

    u = groups["top"].add_parser("users", help="API keys of `memlab serve` (one key = one user)")
    us = u.add_subparsers(dest="users_cmd", metavar="ACTION", required=True)
    a = us.add_parser("add", help="create an API key for user NAME and print it (shown once)")
    a.add_argument("name", help="user id the key acts for")
    a.add_argument("--label", default=None, help="a label to tell keys apart")
    _db(a)
    a.set_defaults(func=_users_add)
    ls = us.add_parser("list", help="list keys (fingerprints, never the secrets)")
    _db(ls)
    ls.set_defaults(func=_users_list)
    r = us.add_parser("revoke", help="revoke every key of user NAME")
    r.add_argument("name")
    _db(r)
    r.set_defaults(func=_users_revoke)

    b = groups["bench"].add_parser("serve", help="requests/s and latency of add, search and turn over loopback")
    b.add_argument("--requests", type=int, default=200, help="requests per operation (default 200)")
    b.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    b.add_argument("--embedder", default=None, help="embedder (default: settings)")
    b.add_argument("--judge", default=None, help="judge (default: settings)")
    b.add_argument("--out", default=None, help="write the run here (run.json, examples.jsonl, bench.md)")
    b.add_argument("--noisy-neighbour", action="store_true",
                   help="instead: user B's search p95 alone and while user A ingests a large document, and the ratio")
    b.add_argument("--ingest-kb", type=float, default=320.0, help="--noisy-neighbour: size of A's document (KB)")
    b.set_defaults(func=_bench)


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="SQLite file (default: $MEMLAB_DATA_DIR/memlab.db, i.e. .memlab/memlab.db)")


def _db_path(args: argparse.Namespace) -> Path | str:
    """``--db`` checked (memlab.cli.common.check_db), or the default ``$MEMLAB_DATA_DIR/memlab.db``."""
    from memlab.cli.common import check_db
    from memlab.config import Settings

    if args.db is None:
        path = Path(Settings().data_dir) / "memlab.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        return check_db(path)
    return check_db(args.db)


def _keys(args: argparse.Namespace) -> Any:
    from memlab.serve.auth import ApiKeys
    from memlab.store.opening import open_database

    return ApiKeys(open_database(_db_path(args)))


def _users_add(args: argparse.Namespace) -> int:
    key = _keys(args).add(args.name, label=args.label)
    print(key)
    print(f"API key for user {args.name!r}: send it as 'Authorization: Bearer <key>'. It is not stored and will "
          "not be shown again.", file=sys.stderr)
    return 0


def _users_list(args: argparse.Namespace) -> int:
    rows = _keys(args).list()
    if not rows:
        print("no API keys (create one with `memlab users add NAME`)", file=sys.stderr)
    for k in rows:
        state = f"revoked {k.revoked_at}" if k.revoked_at else "valid"
        print(f"{k.user_id}\t{k.fingerprint}\t{k.created_at}\t{state}\t{k.label or ''}")
    return 0


def _users_revoke(args: argparse.Namespace) -> int:
    n = _keys(args).revoke(args.name)
    print(f"revoked {n} key(s) of {args.name!r}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from memlab.cli.common import bind, run_server
    from memlab.config import Settings
    from memlab.serve import create_app

    sock = bind(args.host, args.port)  # a port in use fails now, before anything is created or loaded
    try:
        db = _db_path(args)
        if not _is_loopback(args.host):
            print(f"memlab: warning: serving on {args.host} (beyond this machine) over plain HTTP: API keys travel "
                  "in clear text; put a TLS proxy in front.", file=sys.stderr)
        app = create_app(db=db, settings=Settings(), embedder=args.embedder, judge=args.judge,
                         checks=not args.no_checks, reembed=args.reembed)
    except BaseException:
        sock.close()
        raise
    run_server(app, sock, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bench(args: argparse.Namespace) -> int:
    from memlab.lab.bench.serve import run_noisy_neighbour_bench, run_serve_bench

    res: Any
    if args.noisy_neighbour:
        res = run_noisy_neighbour_bench(n_requests=args.requests, ingest_kb=args.ingest_kb, embedder=args.embedder,
                                        judge=args.judge, progress=lambda m: print(m, file=sys.stderr))
    else:
        res = run_serve_bench(n_requests=args.requests, clients=args.clients, embedder=args.embedder, judge=args.judge,
                              progress=lambda m: print(m, file=sys.stderr))
    print(res.to_markdown())
    if args.out:
        out = res.write(args.out)
        print(f"\nwrote {out} (memlab eval show {out})")
    return 0
