"""Tool use of a real model through the single-tool stepper, on a fixed prompt set (``eval/llm_prompts.jsonl``:
it/en/zh messages that need ``memory.search``, ``time.now`` or no tool).

Each prompt is one :func:`~memlab.mcp.run_turn_stepper` turn with memlab's MCP servers connected in process
(``memory`` over a throw-away database holding a few facts of the user, and ``datetime``), exactly as ``/v1/chat``
runs it. Reported (:func:`summarize`):

- ``valid_call_rate``: tool calls whose tool exists, whose arguments parsed, and that the tool ran without error;
- ``right_tool_rate``: turns whose FIRST decision (a tool, or ``none`` = answering directly) is the expected one,
  overall and per expected class;
- ``one_tool_violations``: replies that asked for more than one tool (only the first ran, the stepper sent its
  corrective prompt), and ``violations_repeated_after_correction``: corrected calls that asked for several again;
- ``thinking_leaks``: ``<think>`` text or captured thinking found in a streamed piece or a final answer (must be 0);
- ``p50_ms`` / ``p95_ms``: wall time per turn; ``mean_steps``: model calls per turn.

Run::

    python -m memlab.eval.llm_tools --tool-choice auto --out runs/llm_tools_auto.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memlab._sync import run_blocking

__all__ = ["PROMPTS", "PromptResult", "load_prompts", "main", "one_per_class", "run_prompt_set", "summarize"]

#: The prompt set, relative to the repository root.
PROMPTS = Path("eval/llm_prompts.jsonl")

#: Facts of the evaluated user, so memory.search has something to find.
FACTS = (
    "Sono nato il 12 luglio 1990.", "Abito a Torino.", "Mia sorella si chiama Giulia.", "Il mio piatto preferito è la carbonara.",
    "My wife's name is Sarah.", "My dog is called Rex.", "I play tennis and basketball.", "I work as a nurse.",
    "我的生日是3月5日。", "我女儿叫小美。", "我在华为工作。",
)


@dataclass(frozen=True, slots=True)
class PromptResult:
    """One turn of the prompt set."""

    id: str
    lang: str
    text: str
    expected: str
    first_decision: str
    tools: list[str]
    answer: str
    latency_ms: float
    steps: int
    invalid_calls: int
    valid_calls: int
    violations: int
    violations_repeated: int
    thinking_leaks: int
    stopped: str
    error: str | None = None
    arguments: list[dict[str, Any]] = field(default_factory=list)


def load_prompts(path: str | Path = PROMPTS) -> list[dict[str, str]]:
    """The prompt set: ``[{"id", "lang", "text", "expected"}]``."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


async def _run(llm: Any, prompts: Sequence[dict[str, str]], *, max_steps: int, user: str) -> list[PromptResult]:
    from memlab.app import open_memlab
    from memlab.errors import MemlabError
    from memlab.mcp import MCPRegistry, make_server, run_turn_stepper

    lab = open_memlab(":memory:", llm=None, checks=False)
    out: list[PromptResult] = []
    try:
        for fact in FACTS:
            lab.store.add(user, fact)
        servers = {"memory": make_server("memory", user_id=user, lab=lab), "time": make_server("datetime")}
        async with MCPRegistry(servers) as registry:
            for p in prompts:
                streamed: list[str] = []
                t0 = time.perf_counter()
                error = None
                res = None
                try:
                    res = await run_turn_stepper(llm, registry, p["text"], max_steps=max_steps,
                                                 on_token=streamed.append)
                except MemlabError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                ms = (time.perf_counter() - t0) * 1000.0
                out.append(_result(p, res, streamed, ms, error))
    finally:
        lab.close()
    return out


def _result(p: dict[str, str], res: Any, streamed: list[str], ms: float, error: str | None) -> PromptResult:
    steps = list(res.steps) if res is not None else []
    first = (steps[0].tool or "none") if steps else "error"
    visible = "".join(streamed) + "\n" + (res.content if res is not None else "")
    leaks = int("<think" in visible.lower())
    leaks += sum(1 for s in steps if s.thinking and s.thinking.strip() and s.thinking.strip() in visible)
    invalid = sum(1 for s in steps if s.tool and s.is_error)
    valid = sum(1 for s in steps if s.tool and not s.is_error)
    violations = sum(1 for s in steps if s.dropped)
    repeated = sum(1 for s in steps if s.corrected and s.dropped)
    return PromptResult(
        id=p["id"], lang=p["lang"], text=p["text"], expected=p["expected"], first_decision=first,
        tools=[s.tool for s in steps if s.tool], answer=res.content if res is not None else "", latency_ms=ms,
        steps=len(steps), invalid_calls=invalid, valid_calls=valid, violations=violations,
        violations_repeated=repeated, thinking_leaks=leaks, stopped=res.stopped if res is not None else "error",
        error=error, arguments=[dict(s.arguments) for s in steps if s.tool])


def run_prompt_set(llm: Any, prompts: Sequence[dict[str, str]] | None = None, *, max_steps: int = 3,
                   user: str = "eval-user") -> list[PromptResult]:
    """Run every prompt as one stepper turn with ``llm``; one :class:`PromptResult` each.

    Works in a plain script and inside a running event loop (a Jupyter cell): there the turns run on a worker
    thread with their own loop."""
    def run() -> list[PromptResult]:
        return asyncio.run(_run(llm, prompts if prompts is not None else load_prompts(), max_steps=max_steps,
                                user=user))

    return run_blocking(run, thread_name="memlab-llm-tools")


def one_per_class(prompts: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """The first prompt of each (language, expected decision) pair, in file order: a 9-prompt slice of the set
    (it/en/zh x memory.search/time.now/none) small enough for a notebook cell.

    >>> one_per_class([{"id": "a", "lang": "it", "expected": "none"}, {"id": "b", "lang": "it", "expected": "none"},
    ...                {"id": "c", "lang": "en", "expected": "none"}])
    [{'id': 'a', 'lang': 'it', 'expected': 'none'}, {'id': 'c', 'lang': 'en', 'expected': 'none'}]
    """
    seen: set[tuple[str, str]] = set()
    out = []
    for p in prompts:
        if (p["lang"], p["expected"]) not in seen:
            seen.add((p["lang"], p["expected"]))
            out.append(p)
    return out


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def summarize(results: Sequence[PromptResult]) -> dict[str, Any]:
    """The figures of the module docstring."""
    n = len(results)
    calls = sum(r.valid_calls + r.invalid_calls for r in results)
    right = [r.first_decision == r.expected for r in results]
    per_class = {}
    for cls in sorted({r.expected for r in results}):
        rs = [r for r in results if r.expected == cls]
        per_class[cls] = round(sum(r.first_decision == cls for r in rs) / len(rs), 3)
    lat = [r.latency_ms for r in results]
    chosen: dict[str, int] = {}
    for r in results:
        chosen[r.first_decision] = chosen.get(r.first_decision, 0) + 1
    return {
        "prompts": n,
        "tool_calls": calls,
        "valid_call_rate": round(sum(r.valid_calls for r in results) / calls, 3) if calls else None,
        "right_tool_rate": round(sum(right) / n, 3) if n else None,
        "right_tool_rate_by_expected": per_class,
        "first_decisions": dict(sorted(chosen.items())),
        "one_tool_violations": sum(r.violations for r in results),
        "violations_repeated_after_correction": sum(r.violations_repeated for r in results),
        "thinking_leaks": sum(r.thinking_leaks for r in results),
        "errors": sum(1 for r in results if r.error),
        "stopped_max_steps": sum(1 for r in results if r.stopped == "max_steps"),
        "mean_steps": round(statistics.fmean(r.steps for r in results), 2) if n else None,
        "p50_ms": round(_pct(lat, 0.5)),
        "p95_ms": round(_pct(lat, 0.95)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memlab.eval.llm_tools``: run the prompt set with the llama.cpp model and print the summary."""
    ap = argparse.ArgumentParser(prog="python -m memlab.eval.llm_tools", description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", default=str(PROMPTS))
    ap.add_argument("--tool-choice", choices=["auto", "required"], default="auto")
    ap.add_argument("--tool-mode", choices=["single", "multi"], default="single")
    ap.add_argument("--max-steps", type=int, default=3, help="most tool calls per turn (default 3)")
    ap.add_argument("--gguf", default=None, help="another GGUF file (default: the packaged SmolLM2)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=None, help="write {summary, results} here as JSON")
    args = ap.parse_args(argv)
    from memlab.llm import LlamaCppLLM
    from memlab.process import configure_process

    configure_process()  # OMP_WAIT_POLICY=PASSIVE before llama.cpp loads (this process is ours)

    llm = LlamaCppLLM(args.gguf, tool_choice=args.tool_choice, tool_mode=args.tool_mode)
    t0 = time.perf_counter()
    llm.load()
    load_s = time.perf_counter() - t0
    prompts = load_prompts(args.prompts)[: args.limit]
    results = run_prompt_set(llm, prompts, max_steps=args.max_steps)
    summary = {"model": llm.name, "tool_choice": args.tool_choice, "tool_mode": args.tool_mode,
               "load_s": round(load_s, 2), **summarize(results)}
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"summary": summary, "params": llm.get_params(),
                                              "results": [asdict(r) for r in results]}, ensure_ascii=False, indent=1),
                                  encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
