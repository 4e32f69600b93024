"""Query embedding through ONNX Runtime with int8 weights (a BERT mean-pooling sentence encoder, e.g. MiniLM-L6).

Why it exists: a search embeds one short query, and on a CPU that cost is the encoder's weights read once per query
(42 MB of fp32 matrices for MiniLM-L6). ONNX Runtime's dynamic quantisation stores every matrix of the encoder as
int8 with one scale per output channel (a quarter of the bytes) and quantises the activations per call; its int8
kernels (MLAS) pack the weights once at load. Measured on the packaged MiniLM, one thread, one short query at a time
(``eval/experiments/minilm_engine.py``): p50 about 2 ms against 5 ms for memlab's bfloat16 engine and 8 ms for
float32, cosine to the float32 vector ≥ 0.986 (mean 0.993), and the same top-10 neighbours for 97% of them over a
10k-sentence store. Only *queries* take this path (:class:`~memlab.embedding.MiniLMEmbedder`'s ``query_backend``):
stored vectors keep the float geometry the calibrated thresholds were measured in, and a query's ranking is what
retrieval quality measures (``memlab eval memory-recall``: see the README's figures).

The ONNX file is built here, offline, from the model folder's own weights: ``transformers`` ``BertModel`` + masked
mean pooling exported by ``torch.onnx.export``, then ``onnxruntime.quantization.quantize_dynamic`` (int8,
per channel). It is written once per machine under the cache directory (``$MEMLAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/memlab``, else ``~/.cache/memlab``), keyed by the weights and the library versions, in about 10 s;
nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.embedding.bert_engine import check_architecture, load_tokenizer
from memlab.errors import EmbedderError, InvalidInputError, MissingDependencyError

__all__ = ["OnnxInt8Encoder", "cache_dir"]

log = logging.getLogger(__name__)

#: Bump when the exported graph changes (a new file is built; old ones are left in the cache).
_EXPORT_VERSION = 1


def cache_dir() -> Path:
    """memlab's cache directory: ``$MEMLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/memlab``, else ``~/.cache/memlab``."""
    env = os.environ.get("MEMLAB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "memlab"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the exporters' expected chatter (tracer warnings, a progress bar, the quantiser's advice on stderr)."""
    from transformers.utils import logging as hf_logging

    root = logging.getLogger()
    level = root.level
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
        if bars:
            hf_logging.enable_progress_bar()


def _head_sha256(path: Path, size: int = 1 << 20) -> str:
    """sha256 of the first ``size`` bytes (with the file size, a cheap key for a weights file)."""
    with path.open("rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:  # pragma: no cover - checked by the caller's imports
        return "?"


class OnnxInt8Encoder:
    """A BERT mean-pooling encoder run by ONNX Runtime with int8 weights (built from a sentence-transformers folder).

    Loaded lazily on the first :meth:`encode` (building the int8 file first if the cache has none).

    Args:
        folder: the sentence-transformers model folder (``config.json``, ``model.safetensors``, ``tokenizer.json``,
            ``modules.json`` with mean pooling); other architectures raise :class:`~memlab.errors.EmbedderError`.
        max_seq_length: tokens per text after truncation.
        threads: ONNX Runtime intra-op threads (``None``: torch's current thread count, so one setting governs both).
        cache: where the built model is kept (default :func:`cache_dir` ``/onnx``).

    Raises:
        InvalidInputError: ``max_seq_length`` < 2 or ``threads`` < 1.
        MissingDependencyError: ``onnxruntime`` or ``onnx`` is not installed (raised at load).
        EmbedderError: the folder holds another architecture, or the export failed (raised at load).

    Example:
        >>> from memlab.embedding.sentence_transformers import minilm_path
        >>> OnnxInt8Encoder(minilm_path()).encode(["I live in Rome"]).shape
        (1, 384)
    """

    def __init__(self, folder: str | Path, *, max_seq_length: int = 256, threads: int | None = None,
                 cache: str | Path | None = None) -> None:
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int) or max_seq_length < 2:
            raise InvalidInputError(
                f"The 'max_seq_length' parameter of OnnxInt8Encoder must be an int >= 2. Got {max_seq_length!r}.")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise InvalidInputError(f"The 'threads' parameter of OnnxInt8Encoder must be an int >= 1 or None. "
                                    f"Got {threads!r}.")
        self.folder = Path(folder)
        self.max_seq_length = max_seq_length
        self.threads = threads
        self.cache = Path(cache) if cache is not None else cache_dir() / "onnx"
        self._lock = threading.Lock()
        self._session: Any = None
        self._tok: Any = None
        self._dim = 0

    @property
    def dim(self) -> int:
        """Hidden size (the vector dimension)."""
        self._load()
        return self._dim

    def model_file(self) -> Path:
        """Where the int8 model of this folder lives in the cache (built by :meth:`build` if missing)."""
        st = self.folder / "model.safetensors"
        try:
            key = json.dumps({
                "config": (self.folder / "config.json").read_text(encoding="utf-8"),
                "weights": [st.stat().st_size, _head_sha256(st)],
                "export": _EXPORT_VERSION, "torch": _version("torch"), "onnxruntime": _version("onnxruntime"),
            }, sort_keys=True)
        except OSError as exc:
            raise EmbedderError(f"Could not read the model in {self.folder}: {exc}") from exc
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return self.cache / f"{self.folder.name}-int8-{digest}.onnx"

    def build(self) -> Path:
        """Export the folder's encoder to ONNX and quantise it to int8 (once; the cached file is reused)."""
        target = self.model_file()
        if target.exists():
            return target
        check_architecture(self.folder)
        try:
            import torch
            from onnxruntime.quantization import QuantType, quantize_dynamic
            from transformers import BertModel
        except ImportError as exc:
            raise MissingDependencyError(exc.name or "onnxruntime", "core") from exc

        class _MeanPooled(torch.nn.Module):
            def __init__(self, bert: Any) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, input_ids: Any, attention_mask: Any) -> Any:
                h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                m = attention_mask.unsqueeze(-1).to(h.dtype)
                return (h * m).sum(1) / m.sum(1).clamp(min=1.0)

        log.info("Building the int8 ONNX model of %s in %s (once per machine, ~10 s)", self.folder, target)
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            workdir = tempfile.TemporaryDirectory(dir=self.cache)
        except OSError as exc:
            raise EmbedderError(f"Cannot write the int8 ONNX model to {self.cache}: {exc}. Set MEMLAB_CACHE_DIR to a "
                                "writable directory.") from exc
        with workdir as tmp:
            fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
            try:
                with _quiet():
                    bert = BertModel.from_pretrained(str(self.folder), attn_implementation="eager").eval()
                ids = torch.ones(1, 8, dtype=torch.long)
                axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                        "embedding": {0: "batch"}}
                with torch.no_grad(), _quiet():
                    torch.onnx.export(_MeanPooled(bert), (ids, torch.ones_like(ids)), str(fp32),
                                      input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                                      dynamic_axes=axes, opset_version=17, dynamo=False)
                with _quiet():
                    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
            except Exception as exc:  # exporters raise many types
                raise EmbedderError(f"Could not build the int8 ONNX model of {self.folder}: {exc}") from exc
            os.replace(int8, target)  # atomic: a concurrent builder's file is as good as ours
        return target

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            cfg = check_architecture(self.folder)
            try:
                import onnxruntime as ort
            except ImportError as exc:
                raise MissingDependencyError("onnxruntime", "core") from exc
            path = self.build()
            threads = self.threads
            if threads is None:
                import torch

                threads = torch.get_num_threads()
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            try:
                session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own types
                raise EmbedderError(f"ONNX Runtime could not load {path}: {exc}") from exc
            self._tok = load_tokenizer(self.folder, cfg, self.max_seq_length)
            self._dim = int(cfg["hidden_size"])
            self._session = session

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """Mean-pooled last hidden states of ``texts``, float32 ``(len(texts), dim)`` (not normalised).

        Each text is its own forward pass: the activations are quantised per call, so a text batched with others
        (and their padding) would get another vector; one at a time, a query's vector never depends on its company.
        """
        self._load()
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, enc in enumerate(self._tok.encode_batch([t.strip() for t in texts], add_special_tokens=True)):
            ids = np.asarray([enc.ids], dtype=np.int64)
            out[i] = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        return out

    def get_params(self) -> dict[str, object]:
        """JSON-able description."""
        return {"engine": "onnxruntime", "weights": "int8 (dynamic, per channel)", "max_seq_length": self.max_seq_length}
