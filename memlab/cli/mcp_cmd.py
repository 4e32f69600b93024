"""``memlab mcp serve memory|semantic|datetime``: memlab's MCP servers over WebSocket (``/mcp``) or stdio."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``mcp serve`` to the parser."""
    m = groups["top"].add_parser("mcp", help="MCP servers (memory, semantic, datetime) over WebSocket or stdio")
    ms = m.add_subparsers(dest="mcp_cmd", metavar="ACTION", required=True)
    p = ms.add_parser("serve", help="serve one MCP server")
    p.add_argument("kind", choices=["memory", "semantic", "datetime"], help="which server")
    p.add_argument("--transport", choices=["ws", "stdio"], default="ws",
                   help="ws: WebSocket at ws://HOST:PORT/mcp (+ GET /health); stdio: for desktop MCP hosts")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (ws; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (ws; default 8765)")
    p.add_argument("--db", default=None, help="SQLite file: memories and API keys "
                   "(default: $MEMLAB_DATA_DIR/memlab.db, i.e. .memlab/memlab.db)")
    p.add_argument("--user", default=None, help="the user of a stdio server (memory, semantic); over ws the user "
                   "comes from each connection's API key")
    p.add_argument("--embedder", default=None, help="embedder (default: the one the database was built with)")
    p.add_argument("--reembed", action="store_true",
                   help="allow --embedder to differ from the database's: re-embed every memory and switch for good")
    p.add_argument("--judge", default=None, help="judge name (memory; default: settings)")
    p.add_argument("--no-checks", action="store_true", help="memory: store without background integrity checks")
    p.add_argument("--qdrant-path", default=None, help="semantic: embedded Qdrant folder "
                   "(default: $MEMLAB_QDRANT_PATH, else <db>.qdrant, where `memlab serve` puts /v1/ingest's chunks)")
    p.add_argument("--qdrant-url", default=None, help="semantic: a Qdrant server URL instead of the embedded store "
                   "(default: $MEMLAB_QDRANT_URL)")
    p.add_argument("--collection", default="memlab_chunks", help="semantic: Qdrant collection name")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from memlab.cli.common import bind
    from memlab.errors import InvalidInputError

    if args.transport == "stdio" and args.kind != "datetime" and not args.user:
        raise InvalidInputError(f"--user is required for the {args.kind!r} server over stdio.")
    if args.transport == "ws" and args.user:
        raise InvalidInputError("--user is for stdio only: over ws each connection's API key decides the user "
                                "(create one with `memlab users add NAME`).")
    sock = bind(args.host, args.port) if args.transport == "ws" else None  # a port in use fails before any load
    try:
        return _serve_with(args, sock)
    finally:
        if sock is not None:
            sock.close()


def _serve_with(args: argparse.Namespace, sock: Any) -> int:
    from memlab.cli.common import run_server
    from memlab.cli.serve_cmd import _is_loopback

    closers: list[Any] = []

    def close() -> None:
        for c in reversed(closers):
            c()

    try:
        lab, chunks, keys = _open_backends(args, closers)
    except BaseException:
        close()  # e.g. the Qdrant folder opened, then the database refused: nothing stays locked
        raise

    if args.transport == "stdio":
        from memlab.mcp.app import serve_stdio

        try:
            serve_stdio(args.kind, user_id=args.user, lab=lab, chunks=chunks)
        finally:
            close()
        return 0

    from memlab.mcp.app import create_mcp_app

    if not _is_loopback(args.host):
        print(f"memlab: warning: serving on {args.host} (beyond this machine) without TLS: API keys travel in "
              "clear text; put a TLS proxy in front.", file=sys.stderr)
    app = create_mcp_app(args.kind, lab=lab, chunks=chunks, keys=keys, on_shutdown=close)
    print(f"memlab mcp: {args.kind} server at ws://{args.host}:{args.port}/mcp (health: "
          f"http://{args.host}:{args.port}/health)", file=sys.stderr)
    run_server(app, sock, host=args.host, port=args.port, log_level=args.log_level, ws="websockets")
    return 0


def _open_backends(args: argparse.Namespace, closers: list[Any]) -> tuple[Any, Any, Any]:
    """``(lab, chunks, keys)`` of ``args.kind``; each opened resource's close is appended to ``closers``."""
    from memlab.cli.serve_cmd import _db_path

    lab = chunks = keys = None
    if args.kind == "memory":
        from memlab.app import open_memlab
        from memlab.config import Settings

        lab = open_memlab(_db_path(args), settings=Settings(), embedder=args.embedder, judge=args.judge,
                          checks=not args.no_checks, reembed=args.reembed)
        closers.append(lab.close)
    elif args.kind == "semantic":
        chunks = _chunk_store(args)
        closers.append(chunks.close)
        if args.transport == "ws":
            from memlab.serve.auth import ApiKeys
            from memlab.store.opening import open_database

            db = open_database(_db_path(args))
            keys = ApiKeys(db)
            closers.append(db.close)
    return lab, chunks, keys


def _chunk_store(args: argparse.Namespace) -> Any:
    """The ChunkStore ``memlab serve``'s ``/v1/ingest`` writes to by default: ``--qdrant-url`` or
    ``MEMLAB_QDRANT_URL`` (a server), else ``--qdrant-path`` or ``MEMLAB_QDRANT_PATH``, else ``<db>.qdrant``."""

    from memlab.cli.common import check_folder
    from memlab.cli.serve_cmd import _db_path
    from memlab.config import Settings
    from memlab.embedding import resolve_embedder
    from memlab.errors import BackendError
    from memlab.ingest import ChunkStore
    from memlab.store.opening import default_qdrant_path

    settings = Settings()
    url = args.qdrant_url or settings.qdrant_url
    path = None
    if not url:  # the folder is checked before the embedder loads
        flag = "--qdrant-path" if args.qdrant_path else "MEMLAB_QDRANT_PATH" if settings.qdrant_path else "--db"
        path = check_folder(args.qdrant_path or settings.qdrant_path or default_qdrant_path(_db_path(args), settings.data_dir),
                            flag=flag)
    embedder = resolve_embedder(args.embedder, settings=settings)  # default: settings.embedder (e5)
    try:
        if url:
            return ChunkStore(url=url, embedder=embedder, collection=args.collection)
        return ChunkStore(path=path, embedder=embedder, collection=args.collection)
    except RuntimeError as exc:  # qdrant-client's own errors (e.g. the folder is held by another process)
        where = url or f"--qdrant-path {str(path)!r}"
        raise BackendError(f"Cannot open the Qdrant store at {where}: {exc}") from exc
