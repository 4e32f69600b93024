"""The package's import structure: no cycles, runtime never reaching into the lab, no app frameworks in the core.

Imports flow one way: records/errors/config/protocols <- adapters (embedding, index, judges, llm) <- store <-
services (extraction, integrity, notify, chats, agent) <- evaluation <- apps (CLI, serve, dashboard, notebooks).
Research code (judge training, augmentation, calibration, benchmarks) lives in ``memlab.lab``; runtime packages read
only the artefacts it ships (weights, calibration files).

The graph is read statically from every module's source (``ast``), so a test fails on the offending line, not on
whatever import order a test run happens to use. The cycle check reads every import that runs: module-level and
inside functions (a lazy import only delays a cycle), not those under ``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memlab

ROOT = Path(memlab.__file__).parent
# Entry points that may import anything in memlab (they sit above every layer).
APPS = ("memlab.cli", "memlab.serve", "memlab.mcp", "memlab.lab")
FORBIDDEN_IN_CORE = ("streamlit", "IPython", "ipykernel", "dashboard")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


@functools.cache
def _parse(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once per session (three tests read every module; nothing edits the trees)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(name: str, path: Path, *, top_level_only: bool) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import in ``path`` (only module-level ones if ``top_level_only``)."""
    tree = _parse(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # also look inside module-level `if`/`try` blocks (TYPE_CHECKING is skipped below)
        expanded: list[ast.stmt] = []
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.If | ast.Try):
                expanded.extend(ast.walk(node))  # type: ignore[arg-type]
            else:
                expanded.append(node)
        nodes = expanded
    out: list[tuple[str, int]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
            out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]  # `from pkg import submodule`
    return out


def _runtime_imports(name: str, path: Path) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import in ``path`` that can run: module-level, inside functions and
    classes, but not under ``if TYPE_CHECKING:`` (its ``else`` branch does run)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, int]] = []
    todo: list[ast.AST] = [_parse(path)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
            out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]  # `from pkg import submodule`
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda t: t[1])


def _in(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the memlab modules it imports at run time (function-level imports included, TYPE_CHECKING not)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target, _ in _runtime_imports(name, path):
            if target in mods and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _is_package_edge(a: str, b: str) -> bool:
    """A package's ``__init__`` re-exporting its own submodules (and they importing siblings) is not a layer cycle."""
    return a.startswith(b + ".") or b.startswith(a + ".")


def test_cycle_finder_finds_a_cycle() -> None:
    """The checker below can fail: a 3-cycle and a self-contained DAG."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles_between_modules() -> None:
    graph = _import_graph()
    # Edges between a package and its own submodules are how packages re-export; drop them, keep the rest.
    pruned = {a: {b for b in bs if not _is_package_edge(a, b)} for a, bs in graph.items()}
    cycles = _cycles(pruned)
    where = [
        f"{a} -> {b} ({_modules()[a].relative_to(ROOT.parent)}:{line})"
        for comp in cycles
        for a in comp
        for b, line in _runtime_imports(a, _modules()[a])
        if b in comp and b in pruned[a]
    ]
    assert cycles == [], where


def test_cycle_check_reads_lazy_imports_but_not_type_checking(tmp_path: Path) -> None:
    """An import inside a function is an edge of the cycle check (a lazy import only delays the cycle); one under
    ``if TYPE_CHECKING:`` is not (it never runs), while its ``else`` branch is."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from memlab.a import A\nelse:\n    import memlab.b\n"
        "def f():\n    from memlab.c import g\n"
        "class K:\n    def m(self):\n        from . import d\n",
        encoding="utf-8",
    )
    found = _runtime_imports("memlab.x.m", src)
    assert ("memlab.b", 5) in found and ("memlab.c", 7) in found and ("memlab.x.d", 10) in found
    assert not [t for t, _ in found if t.startswith("memlab.a")]


def test_runtime_never_imports_the_lab() -> None:
    offenders = []
    for name, path in _modules().items():
        if _in(name, APPS):
            continue
        for target, line in _imports(name, path, top_level_only=False):
            if _in(target, ("memlab.lab",)):
                offenders.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert offenders == []


def test_core_imports_no_app_framework() -> None:
    offenders = []
    for name, path in _modules().items():
        for target, line in _imports(name, path, top_level_only=False):
            if _in(target, FORBIDDEN_IN_CORE):
                offenders.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert offenders == []


def test_import_checker_sees_function_level_imports(tmp_path: Path) -> None:
    """A lazy import inside a function counts for the layering rule (it is how the old cycle hid)."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from memlab.lab import calibrate\n", encoding="utf-8")
    found = _imports("memlab.x.m", src, top_level_only=False)
    assert ("memlab.lab", 2) in found and ("memlab.lab.calibrate", 2) in found
    assert _imports("memlab.x.m", src, top_level_only=True) == []


@pytest.mark.subprocess
def test_every_module_imports_in_a_fresh_interpreter() -> None:
    """Each module on its own (sorted order, one interpreter per module would take minutes: import them one after
    another, and separately import the package's leaves first so a cycle that needs a given order shows up)."""
    mods = [m for m in _modules() if not m.endswith("__main__")]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    for order in (mods, list(reversed(mods))):
        r = subprocess.run([sys.executable, "-c", code, *order], capture_output=True, text=True, timeout=600,
                           cwd=ROOT.parent)
        assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("pkg", ["memlab.embedding", "memlab.judges", "memlab.store", "memlab.integrity"])
def test_runtime_packages_ship_no_training_code(pkg: str) -> None:
    """Training, augmentation, calibration and benchmark modules are in ``memlab.lab``, not beside runtime code."""
    folder = ROOT.joinpath(*pkg.split(".")[1:])
    names = {p.stem for p in folder.glob("*.py")}
    assert not names & {"training", "augment", "calibrate", "bench", "_design_b"}


_MEMORIES_SQL = re.compile(r"\b(FROM|INTO|UPDATE|JOIN)\s+memories\b", re.IGNORECASE)


def test_memories_sql_lives_in_the_store() -> None:
    """Every statement on the ``memories`` table is written in ``memlab.store`` (the lab's benchmarks included);
    everything else goes through :class:`~memlab.store.MemoryStore` methods."""
    offenders = [
        f"{name}:{i}"
        for name, path in _modules().items()
        if not name.startswith("memlab.store")
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _MEMORIES_SQL.search(line)
    ]
    assert not offenders, offenders
    assert _MEMORIES_SQL.search('db.query("SELECT id FROM memories WHERE x")')  # the pattern does match SQL


_OUTSIDE_DOCS = re.compile(r"DESIGN §|DESIGN\.md|STYLE §|seed-audit|\bseed 00\d|\bissue \d+\b|§\d")


def test_code_explains_itself_without_outside_documents() -> None:
    """Comments, docstrings and CLI help say what they mean instead of pointing at design notes or issue numbers
    that a user of the package cannot read."""
    files = {**_modules(), **{p.stem: p for p in (ROOT.parent / "dashboard").rglob("*.py")}}
    offenders = [
        f"{name}:{i}: {line.strip()[:80]}"
        for name, path in files.items()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _OUTSIDE_DOCS.search(line)
    ]
    assert not offenders, offenders
    assert _OUTSIDE_DOCS.search("see DESIGN §1.3") and _OUTSIDE_DOCS.search("(issue 5)")
