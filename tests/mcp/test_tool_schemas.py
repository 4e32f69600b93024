"""Every tool of every memlab MCP server, called through the official SDK client over a real WebSocket with
schema-valid random arguments and with invalid ones: a result for each (an ``isError`` one when the arguments or
the call are refused), never a crash, an internal error or a dropped connection."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memlab.app import Memlab
from memlab.mcp import create_mcp_app, websocket_client
from memlab.serve.auth import ApiKeys
from memlab.serve.runner import ThreadedServer
from memlab.testing import FakeEmbedder

jsonschema = pytest.importorskip("jsonschema", reason="LOUD SKIP: jsonschema is not installed")

#: Characters random strings are made of: ASCII, Italian, Chinese, emoji, spaces and, sometimes, a control
#: character (schema-valid: the tools' schemas do not forbid them; the library refuses them with an error result).
ALPHABET = string.ascii_letters + string.digits + " .,'?-" + "àèéìòù" + "生日北京上海" + "🎂🙂" + "\t\n"
CONTROL = "\x00\x07\x1b\x7f"
N_VALID = 12  # random valid calls per tool


def _string(rng: random.Random, schema: dict[str, Any]) -> str:
    lo = int(schema.get("minLength", 0))
    hi = min(int(schema.get("maxLength", 40)), lo + 40)
    n = rng.randint(lo, max(lo, hi))
    text = "".join(rng.choice(ALPHABET) for _ in range(n))
    if text and rng.random() < 0.15:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(CONTROL) + text[i + 1:]
    return text


def random_instance(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any]) -> Any:
    """A random value valid for ``schema`` (the subset of JSON Schema pydantic writes for the tools' arguments)."""
    if "$ref" in schema:
        return random_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], rng, defs)
    if "anyOf" in schema:
        return random_instance(rng.choice(schema["anyOf"]), rng, defs)
    kind = schema.get("type")
    if kind == "string":
        return _string(rng, schema)
    if kind == "integer":
        lo, hi = int(schema.get("minimum", -(2**31))), int(schema.get("maximum", 2**31))
        return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(lo, min(hi, lo + 10))])
    if kind == "number":
        return rng.uniform(float(schema.get("minimum", -1e6)), float(schema.get("maximum", 1e6)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        n = rng.randint(int(schema.get("minItems", 0)), min(int(schema.get("maxItems", 5)), 5))
        return [random_instance(schema.get("items", {}), rng, defs) for _ in range(n)]
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {k: random_instance(s, rng, defs) for k, s in props.items() if k in required or rng.random() < 0.6}
    raise AssertionError(f"unexpected schema {schema}")


def invalid_arguments(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any]) -> list[Any]:
    """Argument objects that break the schema in one way each (checked invalid below)."""
    props = schema.get("properties", {})
    required = list(schema.get("required", []))
    base = {k: random_instance(props[k], rng, defs) for k in required}
    out: list[Any] = [{**base, "user_id": "bob"}, {**base, "unexpected": [1, 2, 3]}]
    for k in required:
        out.append({kk: v for kk, v in base.items() if kk != k})  # a required argument missing
    for k, s in props.items():
        types = {s.get("type")} | {a.get("type") for a in s.get("anyOf", [])}
        if "string" in types:
            out += [{**base, k: ["a list"]}, {**base, k: {"an": "object"}}, {**base, k: 12}]
            if "maxLength" in s or any("maxLength" in a for a in s.get("anyOf", [])):
                limit = s.get("maxLength") or max(a.get("maxLength", 0) for a in s.get("anyOf", []))
                out.append({**base, k: "x" * (int(limit) + 1)})
            if s.get("minLength"):
                out.append({**base, k: ""})
        if "integer" in types:
            out += [{**base, k: "not a number"}, {**base, k: 1.5}, {**base, k: [1]}]
            if "minimum" in s:
                out.append({**base, k: int(s["minimum"]) - 1})
            if "maximum" in s:
                out.append({**base, k: int(s["maximum"]) + 1})
        if "boolean" in types:
            out += [{**base, k: "perhaps"}, {**base, k: {"x": 1}}]
        if "array" in types:
            out += [{**base, k: "a string, not a list"}, {**base, k: [{"not": "a string"}]}]
    return out


@pytest.fixture
def servers(lab: Memlab, tmp_path: Path) -> Iterator[dict[str, tuple[str, str | None]]]:
    """The three servers over WebSocket on loopback: ``kind -> (ws url, key)``."""
    pytest.importorskip("qdrant_client", reason="LOUD SKIP: memlab[ingest] (qdrant-client) is not installed")
    from memlab.ingest import ChunkStore

    keys = ApiKeys(lab.store.db)
    key = keys.add("alice")
    lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
    chunks = ChunkStore(path=tmp_path / "qdrant", embedder=FakeEmbedder(dim=32, bag_of_words=True))
    chunks.ingest_text("alice", "Note di viaggio: Tokyo a maggio, Kyoto in treno.", source="viaggio.md")
    lives = {
        "memory": ThreadedServer(create_mcp_app("memory", lab=lab)).start(),
        "datetime": ThreadedServer(create_mcp_app("datetime")).start(),
        "semantic": ThreadedServer(create_mcp_app("semantic", chunks=chunks, keys=keys)).start(),
    }
    yield {kind: (live.url.replace("http://", "ws://") + "/mcp", None if kind == "datetime" else key)
           for kind, live in lives.items()}
    for live in lives.values():
        live.stop()
    chunks.close()


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_every_tool_answers_valid_and_invalid_arguments(servers: dict[str, tuple[str, str | None]],
                                                       lab: Memlab) -> None:
    rng = random.Random(40)
    report: dict[str, dict[str, int]] = {}

    async def exercise(kind: str, url: str, key: str | None) -> None:
        async with Client(websocket_client(url, token=key), mode="legacy", read_timeout_seconds=60) as c:
            tools = (await c.list_tools()).tools
            assert tools, kind
            for tool in tools:
                schema = tool.input_schema
                defs = schema.get("$defs", {})
                validator = jsonschema.Draft202012Validator(schema)
                counts = report.setdefault(f"{kind}.{tool.name}", {"ok": 0, "error": 0, "refused": 0})
                for _ in range(N_VALID):
                    args = random_instance(schema, rng, defs)
                    validator.validate(args)  # the generator really makes schema-valid arguments
                    res = await c.call_tool(tool.name, args)
                    text = _text(res)
                    assert "internal error" not in text and "Invalid arguments" not in text, (tool.name, args, text)
                    if res.is_error:
                        # schema-valid arguments may still name something that does not exist (an id, a time
                        # zone) or hold text the library refuses (a control character): a memlab error, said so
                        assert text.startswith(("NotFoundError", "InvalidInputError")), (tool.name, args, text)
                        counts["error"] += 1
                    else:
                        json.loads(text)
                        counts["ok"] += 1
                for args in invalid_arguments(schema, rng, defs):
                    assert not validator.is_valid(args), (tool.name, args)
                    res = await c.call_tool(tool.name, args)
                    assert res.is_error, (tool.name, args, _text(res))
                    assert "internal error" not in _text(res), (tool.name, args, _text(res))
                    counts["refused"] += 1
                assert (await c.list_tools()).tools  # the connection is still up after every refusal
            unknown = await c.call_tool("no_such_tool", {})
            assert unknown.is_error and "Unknown tool" in _text(unknown)
            assert [t.name for t in (await c.list_tools()).tools] == [t.name for t in tools]

    async def main() -> None:
        for kind, (url, key) in servers.items():
            await exercise(kind, url, key)

    anyio.run(main)
    print("tool calls:", report)
    assert all(c["ok"] + c["error"] == N_VALID and c["refused"] > 0 for c in report.values()), report
    assert sum(c["ok"] for c in report.values()) > N_VALID, report  # most valid calls succeed
    assert {"memory.search", "datetime.now", "semantic.query"} <= set(report), report
    # only alice's data was touched (the tools carry no user argument)
    assert {m.user_id for m in lab.store.list("alice", include_inactive=True)} == {"alice"}
    assert lab.store.list("bob") == []
