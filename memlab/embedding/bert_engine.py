"""A lean inference engine for BERT sentence encoders with mean pooling (the packaged MiniLM-L6).

Why it exists: a memory search embeds one short query, and on a CPU that cost is the model's weights, read once
per query (MiniLM-L6's six layers hold 42 MB of fp32 matrices, more than the L3 cache), plus the Python of the
general-purpose stack around them (``sentence-transformers`` → ``transformers`` ``BertModel``: masks, dispatch,
dataloader-style batching). This engine runs the same weights, read from the model folder's ``model.safetensors``,
through a fixed forward pass written with ``torch.nn.functional`` (fused QKV projection,
``scaled_dot_product_attention``, no attention mask for a single text), tokenised with the folder's
``tokenizer.json`` by the Rust ``tokenizers`` library directly.

Precision. ``dtype="auto"`` keeps the weights in bfloat16 when the CPU multiplies bfloat16 natively (AVX512-BF16
or AMX; PyTorch's oneDNN kernels), else float32. bfloat16 halves the bytes read per query; accumulation stays in
float32 inside oneDNN, layer norms and pooling run on the result. Measured on the packaged MiniLM
(``tests/embedding/test_bert_engine.py``): cosine to the float32 ``sentence-transformers`` vector ≥ 0.9999 on
English, Italian and Chinese sentences. int8 dynamic quantisation was measured too and not taken: 2.5x faster again
but cosine 0.955-0.99 to float32 (``eval/experiments/minilm_engine.py``).

Only the architecture it implements is accepted: ``BertModel`` with absolute positions and exact GELU, followed by
a mean-pooling module (``modules.json`` of a sentence-transformers folder); anything else raises
:class:`~memlab.errors.EmbedderError`, so a caller can fall back to ``sentence-transformers``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlab.errors import EmbedderError, InvalidInputError, MissingDependencyError

__all__ = ["BertMeanPoolEngine", "EngineDtype", "native_bf16"]

EngineDtype = Literal["auto", "bfloat16", "float32"]
_DTYPES = ("auto", "bfloat16", "float32")
#: Texts of one forward pass (after sorting a batch by length, so padding stays small).
_SUB_BATCH = 16


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), as PyTorch reports it."""
    try:
        import torch
    except ImportError:  # pragma: no cover - core dependency
        return False
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(torch.cpu, probe, None)
        try:
            if fn is not None and bool(fn()):
                return bool(torch.backends.mkldnn.is_available())
        except RuntimeError:  # pragma: no cover - probe unavailable on this build
            continue
    return False


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"Could not read {path}: {exc}") from exc


def check_architecture(folder: Path) -> dict[str, Any]:
    """The model's ``config.json`` if the folder is a BERT encoder with mean pooling; else EmbedderError."""
    cfg = _read_json(folder / "config.json")
    problems = []
    if cfg.get("model_type") != "bert":
        problems.append(f"model_type {cfg.get('model_type')!r} (needs 'bert')")
    if cfg.get("hidden_act", "gelu") != "gelu":
        problems.append(f"hidden_act {cfg.get('hidden_act')!r} (needs 'gelu')")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        problems.append(f"position_embedding_type {cfg.get('position_embedding_type')!r}")
    modules = _read_json(folder / "modules.json") if (folder / "modules.json").exists() else []
    pooling = [m for m in modules if str(m.get("type", "")).endswith("Pooling")]
    if not pooling:
        problems.append("no sentence-transformers Pooling module in modules.json")
    else:
        pcfg = _read_json(folder / pooling[0].get("path", "1_Pooling") / "config.json")
        modes = [k for k, v in pcfg.items() if k.startswith("pooling_mode") and v]
        if modes != ["pooling_mode_mean_tokens"]:
            problems.append(f"pooling {modes} (needs mean tokens only)")
    others = [m.get("type") for m in modules
              if not str(m.get("type", "")).endswith(("Transformer", "Pooling", "Normalize"))]
    if others:
        problems.append(f"extra modules {others}")
    if not (folder / "model.safetensors").exists() or not (folder / "tokenizer.json").exists():
        problems.append("model.safetensors or tokenizer.json missing")
    if problems:
        raise EmbedderError(f"{folder} is not a model BertMeanPoolEngine runs: {'; '.join(problems)}.")
    return dict(cfg)


def load_tokenizer(folder: Path, cfg: dict[str, Any], max_seq_length: int) -> Any:
    """The folder's ``tokenizer.json`` (Rust ``tokenizers``): no padding, truncation at ``max_seq_length`` tokens."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - core dependency (via transformers)
        raise MissingDependencyError("tokenizers", "core") from exc
    try:
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises its own error types
        raise EmbedderError(f"Could not load the tokenizer in {folder}: {exc}") from exc
    tok.no_padding()
    tok.enable_truncation(max_length=min(max_seq_length, int(cfg.get("max_position_embeddings", 512))))
    return tok


def _sorted_batches(ids: list[list[int]], size: int = _SUB_BATCH) -> list[list[int]]:
    """Indices of ``ids`` in forward passes of at most ``size`` texts, sorted by length (little padding)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]


class BertMeanPoolEngine:
    """BERT encoder + attention-masked mean pooling, from a sentence-transformers model folder (offline).

    Loaded lazily on the first :meth:`encode`. Calls are serialised by a lock (each already uses every torch
    thread). Thread count is PyTorch's process-wide setting (``torch.set_num_threads``).

    Args:
        folder: the model folder (``config.json``, ``model.safetensors``, ``tokenizer.json``, ``modules.json``).
        dtype: ``auto`` (bfloat16 where the CPU has native bfloat16, else float32), ``bfloat16`` or ``float32``.
        max_seq_length: tokens per text after truncation (the sentence-transformers setting, 256 for MiniLM).

    Raises:
        InvalidInputError: unknown ``dtype`` or ``max_seq_length`` < 2.
        EmbedderError: the folder holds another architecture (raised at load).

    Example:
        >>> from memlab.embedding.sentence_transformers import minilm_path
        >>> eng = BertMeanPoolEngine(minilm_path(), dtype="float32")
        >>> eng.encode(["I live in Rome"]).shape
        (1, 384)
    """

    def __init__(self, folder: str | Path, *, dtype: EngineDtype = "auto", max_seq_length: int = 256) -> None:
        if dtype not in _DTYPES:
            raise InvalidInputError(
                f"The 'dtype' parameter of BertMeanPoolEngine must be one of {list(_DTYPES)}. Got {dtype!r} instead.")
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int) or max_seq_length < 2:
            raise InvalidInputError(
                f"The 'max_seq_length' parameter of BertMeanPoolEngine must be an int >= 2. Got {max_seq_length!r}.")
        self.folder = Path(folder)
        self.requested_dtype = dtype
        self.max_seq_length = max_seq_length
        self._lock = threading.Lock()
        self._loaded = False
        self._layers: list[tuple[Any, ...]] = []
        self._emb: tuple[Any, ...] = ()
        self._tok: Any = None
        self._cfg: dict[str, Any] = {}
        self._dtype: Any = None

    @property
    def dtype(self) -> str:
        """The weights' precision in use (``bfloat16`` or ``float32``; resolves ``auto``, loads the model)."""
        self._load()
        return "bfloat16" if str(self._dtype) == "torch.bfloat16" else "float32"

    @property
    def dim(self) -> int:
        """Hidden size (the vector dimension)."""
        self._load()
        return int(self._cfg["hidden_size"])

    def _load(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            cfg = check_architecture(self.folder)
            try:
                import torch
                from safetensors.torch import load_file
            except ImportError as exc:  # pragma: no cover - core dependencies (via sentence-transformers)
                raise MissingDependencyError(exc.name or "torch", "core") from exc
            want = self.requested_dtype
            if want == "auto":
                want = "bfloat16" if native_bf16() else "float32"
            dt = torch.bfloat16 if want == "bfloat16" else torch.float32
            try:
                sd = load_file(str(self.folder / "model.safetensors"))
            except Exception as exc:  # safetensors raises its own error types
                raise EmbedderError(f"Could not load the model in {self.folder}: {exc}") from exc
            sd = {k.removeprefix("bert."): v for k, v in sd.items()}
            tok = load_tokenizer(self.folder, cfg, self.max_seq_length)

            def w(name: str, dtype: Any = dt) -> Any:
                if name not in sd:
                    raise EmbedderError(f"{self.folder}/model.safetensors has no tensor {name!r}.")
                return sd[name].to(dtype).contiguous()

            layers = []
            for i in range(int(cfg["num_hidden_layers"])):
                p = f"encoder.layer.{i}."
                att = p + "attention.self."
                qkv_w = torch.cat([w(att + "query.weight"), w(att + "key.weight"), w(att + "value.weight")])
                qkv_b = torch.cat([w(att + "query.bias"), w(att + "key.bias"), w(att + "value.bias")])
                layers.append((
                    qkv_w.contiguous(), qkv_b,
                    w(p + "attention.output.dense.weight"), w(p + "attention.output.dense.bias"),
                    w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias"),
                    w(p + "intermediate.dense.weight"), w(p + "intermediate.dense.bias"),
                    w(p + "output.dense.weight"), w(p + "output.dense.bias"),
                    w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"),
                ))
            self._emb = (
                w("embeddings.word_embeddings.weight"), w("embeddings.position_embeddings.weight"),
                w("embeddings.token_type_embeddings.weight")[0],
                w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"),
            )
            self._layers = layers
            self._tok = tok
            self._cfg = cfg
            self._dtype = dt
            self._loaded = True

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of ``texts`` (stripped, as sentence-transformers does; truncated to ``max_seq_length``)."""
        self._load()
        return [e.ids for e in self._tok.encode_batch([t.strip() for t in texts], add_special_tokens=True)]

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """Mean-pooled last hidden states of ``texts``, float32 ``(len(texts), dim)`` (not normalised)."""
        self._load()
        import torch

        ids = self.token_ids(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for idx in _sorted_batches(ids):
                out[idx] = self._forward([ids[i] for i in idx]).numpy()
        return out

    def _forward(self, batch: list[list[int]]) -> Any:
        import torch
        import torch.nn.functional as F

        cfg = self._cfg
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        hd = hidden // heads
        eps = float(cfg.get("layer_norm_eps", 1e-12))
        n = max(len(x) for x in batch)
        b = len(batch)
        pad = int(cfg.get("pad_token_id", 0) or 0)
        ids = torch.tensor([x + [pad] * (n - len(x)) for x in batch], dtype=torch.long)
        lengths = torch.tensor([len(x) for x in batch])
        keep = torch.arange(n)[None, :] < lengths[:, None]  # (b, n) real tokens
        mask = None if bool(keep.all()) else keep[:, None, None, :]  # SDPA: True = attend
        word, pos, typ, ln_w, ln_b = self._emb
        x = F.layer_norm(word[ids] + pos[:n] + typ, (hidden,), ln_w, ln_b, eps)
        for qkv_w, qkv_b, o_w, o_b, l1_w, l1_b, i_w, i_b, d_w, d_b, l2_w, l2_b in self._layers:
            qkv = F.linear(x, qkv_w, qkv_b).view(b, n, 3, heads, hd).permute(2, 0, 3, 1, 4)
            att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=mask)
            att = att.transpose(1, 2).reshape(b, n, hidden)
            x = F.layer_norm(F.linear(att, o_w, o_b) + x, (hidden,), l1_w, l1_b, eps)
            x = F.layer_norm(F.linear(F.gelu(F.linear(x, i_w, i_b)), d_w, d_b) + x, (hidden,), l2_w, l2_b, eps)
        x = x.float()
        if mask is None:
            return x.mean(dim=1)
        m = keep.unsqueeze(-1).float()
        return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)

    def get_params(self) -> dict[str, object]:
        """JSON-able description (precision resolved)."""
        return {"engine": "bert-mean-pool", "dtype": self.dtype, "max_seq_length": self.max_seq_length}
