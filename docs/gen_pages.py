"""Pages whose source of truth lives outside docs/, generated at build time by ``mkdocs-gen-files``.

- ``architecture.md``: ``ARCHITECTURE.md``;
- ``models/cards/<name>.md``: each judge's card, ``memlab/judges/weights/<name>/CARD.md``;
- ``evals/datasets/<name>.md``: each dataset's card, ``datasets/<name>/SOURCE.md``; ``datasets/README.md`` and a
  table of the cards are appended to ``evals/datasets.md``;
- ``evals/suite-files.md``: ``eval/README.md`` (the suite's files, sampling, baselines, measured figures);
- ``notebooks/*.ipynb``: the notebooks with their stored outputs (plotly figures given an HTML twin), rendered
  by ``mkdocs-jupyter``;
- ``reference/cli.md``: ``memlab --help`` of every command, from the real argument parser.

Nothing is copied by hand, so these pages cannot drift from the files. ``tests/test_docs.py`` imports
:func:`generated_pages` to know which nav entries exist only at build time.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cards() -> dict[str, Path]:
    return {p.parent.name: p for p in sorted((ROOT / "memlab" / "judges" / "weights").glob("*/CARD.md"))}


def _datasets() -> dict[str, Path]:
    return {p.parent.name: p for p in sorted((ROOT / "datasets").glob("*/SOURCE.md"))}


def _notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def generated_pages() -> list[str]:
    """Paths (relative to docs/) of every page this script writes."""
    pages = ["architecture.md", "evals/suite-files.md", "reference/cli.md"]
    pages += [f"models/cards/{name}.md" for name in _cards()]
    pages += [f"evals/datasets/{name}.md" for name in _datasets()]
    pages += [f"notebooks/{p.name}" for p in _notebooks()]
    return pages


def _first_line(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip().lstrip(">#").strip()
        if line:
            return line.replace("|", "\\|")
    return ""


PLOTLY = "application/vnd.plotly.v1+json"
#: where the site serves plotly.js, relative to a notebook page (``notebooks/<name>/index.html``)
PLOTLY_JS = "../../assets/plotly.min.js"


def notebook_for_site(path: Path) -> str:
    """The notebook as stored, plus an HTML rendering of each plotly figure.

    The notebooks keep plotly figures as plotly JSON only, which nbconvert's HTML exporter cannot show; each gets a
    ``text/html`` twin (``plotly.io.to_html``), loading plotly.js from the site itself (:func:`_plotly_js`).
    """
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY in data and "text/html" not in data:
                try:
                    import plotly.io as pio
                except ImportError:  # memlab[eval] not installed: the figure stays unrendered
                    return json.dumps(nb, ensure_ascii=False)
                data["text/html"] = pio.to_html(data[PLOTLY], include_plotlyjs=PLOTLY_JS, full_html=False,
                                                validate=False)
    return json.dumps(nb, ensure_ascii=False)


def _plotly_js() -> bytes | None:
    """plotly.js as bundled in the plotly package (served with the site, so figures work offline)."""
    try:
        import plotly
    except ImportError:
        return None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return path.read_bytes() if path.exists() else None


def _commands(parser: argparse.ArgumentParser, prefix: str, summary: str = "") -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(command line, one-line summary, parser)`` for ``parser`` and every sub-command under it, depth first."""
    out = [(prefix, summary, parser)]
    seen: set[int] = set()
    for action in parser._actions:  # argparse keeps sub-parsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias
                    continue
                seen.add(id(sub))
                text = helps.get(name) or (sub.description or "")
                out += _commands(sub, f"{prefix} {name}", text.strip().split(". ")[0].split("\n")[0])
    return out


def cli_reference() -> str:
    """The CLI page: a table of every command, then each command's ``--help``."""
    os.environ["COLUMNS"] = "110"  # argparse wraps at the terminal width: a fixed width keeps the page stable
    from memlab.cli.main import build_parser

    parts = [
        "# CLI reference\n",
        "Every `memlab` command with its `--help`, generated from the real argument parser "
        "(`memlab.cli.main.build_parser`) when the site is built.\n",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = _commands(build_parser(), "memlab")
    for line, summary, _ in commands[1:]:
        parts.append(f"| [`{line}`](#{line.replace(' ', '-')}) | {summary.replace('|', '/')} |")
    parts.append("")
    for line, _, parser in commands:
        parts.append(f"## `{line}` {{ #{line.replace(' ', '-')} }}\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def main() -> None:
    import mkdocs_gen_files

    def write(path: str, text: str, source: Path | None = None) -> None:
        with mkdocs_gen_files.open(path, "w") as f:
            f.write(text)
        if source is not None:
            mkdocs_gen_files.set_edit_path(path, source.relative_to(ROOT).as_posix())

    arch = ROOT / "ARCHITECTURE.md"
    write("architecture.md", arch.read_text(encoding="utf-8"), arch)

    for name, card in _cards().items():
        write(f"models/cards/{name}.md", card.read_text(encoding="utf-8"), card)

    suite = ROOT / "eval" / "README.md"
    write("evals/suite-files.md", suite.read_text(encoding="utf-8"), suite)

    readme = (ROOT / "datasets" / "README.md").read_text(encoding="utf-8").split("\n")
    if readme and readme[0].startswith("# "):
        readme = readme[1:]  # the page has its own title
    rows = ["", *readme, "", "## Every card", "", "| set | card (first line: license class) |", "|---|---|"]
    for name, card in _datasets().items():
        write(f"evals/datasets/{name}.md", card.read_text(encoding="utf-8"), card)
        rows.append(f"| [`{name}`](datasets/{name}.md) | {_first_line(card)} |")
    with mkdocs_gen_files.open("evals/datasets.md", "a") as f:
        f.write("\n".join(rows) + "\n")

    js = _plotly_js()
    if js is not None:
        with mkdocs_gen_files.open("assets/plotly.min.js", "wb") as f:
            f.write(js)
    for nb in _notebooks():
        with mkdocs_gen_files.open(f"notebooks/{nb.name}", "w") as f:
            f.write(notebook_for_site(nb))

    write("reference/cli.md", cli_reference())


if __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path), not when a test imports it
    main()
