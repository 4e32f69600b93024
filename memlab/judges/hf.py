"""Judges built on Hugging Face sequence-classification models (NLI cross-encoders).

:class:`HFJudge` loads any ``AutoModelForSequenceClassification`` checkpoint (a local directory, or a hub id
when a hub is reachable) and reads the label mapping from ``config.id2label``. memlab's own trained judge
(:class:`memlab.judges.default.DefaultJudge`) is an :class:`HFJudge` over files shipped in the package plus a
calibration temperature.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import check_positive_int, check_text
from memlab.errors import InvalidInputError, JudgeError, MissingDependencyError
from memlab.records import Label, Verdict

__all__ = ["HFJudge", "check_pairs", "label_from_name"]

log = logging.getLogger(__name__)

_ALIASES = {
    "contradiction": Label.CONTRADICTION,
    "contradict": Label.CONTRADICTION,
    "contradicted": Label.CONTRADICTION,
    "entailment": Label.ENTAILMENT,
    "entails": Label.ENTAILMENT,
    "entailed": Label.ENTAILMENT,
    "neutral": Label.NEUTRAL,
    "not_contradiction": Label.NOT_CONTRADICTION,
    "non_contradiction": Label.NOT_CONTRADICTION,
    "no_contradiction": Label.NOT_CONTRADICTION,
    "not_entailment": Label.NEUTRAL,
    "irrelevant": Label.NEUTRAL,
}

MAX_CHARS = 20_000
"""Longest premise/hypothesis accepted (characters); the model truncates to ``max_length`` tokens anyway."""


def label_from_name(name: str) -> Label | None:
    """Map a model's class name (``CONTRADICTION``, ``Entailment``, ``not_contradiction`` ...) to a :class:`Label`.

    Args:
        name: the class name from ``config.id2label``.

    Returns:
        The label, or ``None`` when the name is not an NLI class (``LABEL_0`` ...).

    Example:
        >>> label_from_name("CONTRADICTION").value
        'contradiction'
        >>> label_from_name("LABEL_0") is None
        True
    """
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    return _ALIASES.get(key)


def check_pairs(pairs: Any, *, owner: str) -> list[tuple[str, str]]:
    """Validate a batch of ``(premise, hypothesis)`` pairs and return them cleaned.

    Args:
        pairs: a sequence of 2-sequences of non-empty strings (at most :data:`MAX_CHARS` characters each).
        owner: name used in error messages.

    Returns:
        The pairs as a list of stripped, NFC-normalised string tuples.

    Raises:
        InvalidInputError: not a sequence of pairs, or a text is empty, too long or has control characters.

    Example:
        >>> check_pairs([(" a ", "b")], owner="demo")
        [('a', 'b')]
    """
    if isinstance(pairs, str | bytes) or not isinstance(pairs, Sequence):
        raise InvalidInputError(
            f"The 'pairs' parameter of {owner} must be a sequence of (premise, hypothesis) tuples. "
            f"Got {type(pairs).__name__} instead."
        )
    out: list[tuple[str, str]] = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InvalidInputError(
                f"The 'pairs' parameter of {owner} must hold (premise, hypothesis) 2-tuples. "
                f"Got {pair!r} at index {i} instead."
            )
        a = check_text(pair[0], name=f"pairs[{i}][0]", owner=owner, max_chars=MAX_CHARS)
        b = check_text(pair[1], name=f"pairs[{i}][1]", owner=owner, max_chars=MAX_CHARS)
        out.append((a, b))
    return out


class HFJudge:
    """A sequence-classification NLI model as a contradiction judge (loaded lazily on first use).

    The label mapping comes from ``config.id2label`` (``contradiction``/``entailment``/``neutral``, any case,
    or a binary ``contradiction``/``not_contradiction`` head); pass ``label_map`` for models whose config
    says only ``LABEL_0``.... ``Verdict.probability`` is the softmax probability of the contradiction class
    after dividing the logits by ``temperature`` (1.0 = the model's own scale).

    Args:
        model: local directory or hub id.
        name: judge name recorded in verdicts (default ``"hf:<model>"``).
        temperature: calibration temperature (> 0) applied to the logits.
        label_map: optional ``{class index: label name}`` overriding ``config.id2label``.
        batch_size: pairs per forward pass.
        max_length: tokens per pair (longer pairs are truncated, the premise first).
        decision_threshold: when set, the label is ``contradiction`` iff the calibrated P(contradiction) is at
            least this (else the most probable other class); ``None`` takes the most probable class.
        truncation_side: ``"right"`` (the transformers default) or ``"left"`` (keeps the end of long texts, i.e.
            the latest turns of a dialogue context).
        quantize: ``"int8"`` applies torch dynamic int8 quantisation to the linear layers; ``None`` keeps fp32.
        num_threads: torch intra-op threads while judging (``None`` leaves torch's setting alone).
        device: torch device.

    Example:
        >>> judge = HFJudge("/path/to/nli-model")  # nothing is loaded until judge() is called
        >>> judge.get_params()["quantize"] is None
        True
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        name: str | None = None,
        temperature: float = 1.0,
        label_map: Mapping[int, str] | None = None,
        batch_size: int = 32,
        max_length: int = 128,
        truncation_side: str = "right",
        decision_threshold: float | None = None,
        quantize: str | None = None,
        num_threads: int | None = None,
        device: str = "cpu",
    ) -> None:
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not temperature > 0:
            raise InvalidInputError(
                f"The 'temperature' parameter of HFJudge must be a float > 0. Got {temperature!r} instead."
            )
        if quantize not in (None, "int8"):
            raise InvalidInputError(
                f"The 'quantize' parameter of HFJudge must be None or 'int8'. Got {quantize!r} instead."
            )
        self.model = str(model)
        self.name = name or f"hf:{self.model}"
        self.temperature = float(temperature)
        self.label_map = dict(label_map) if label_map is not None else None
        self.batch_size = check_positive_int(batch_size, name="batch_size", owner="HFJudge")
        self.max_length = check_positive_int(max_length, name="max_length", owner="HFJudge")
        if truncation_side not in ("left", "right"):
            raise InvalidInputError(
                f"The 'truncation_side' parameter of HFJudge must be 'left' or 'right'. Got {truncation_side!r} instead."
            )
        self.truncation_side = truncation_side
        if decision_threshold is not None and (
            isinstance(decision_threshold, bool)
            or not isinstance(decision_threshold, int | float)
            or not 0.0 < float(decision_threshold) < 1.0
        ):
            raise InvalidInputError(
                "The 'decision_threshold' parameter of HFJudge must be None or a float in (0, 1). "
                f"Got {decision_threshold!r} instead."
            )
        self.decision_threshold = None if decision_threshold is None else float(decision_threshold)
        self.quantize = quantize
        self.num_threads = (
            None
            if num_threads is None
            else check_positive_int(num_threads, name="num_threads", owner="HFJudge")
        )
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self._labels: list[Label] = []
        self._contradiction: int = -1
        self._lock = threading.Lock()

    # -- loading -------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            try:
                import torch
                import transformers  # noqa: F401
            except ImportError as exc:  # pragma: no cover - core dependency
                raise MissingDependencyError("transformers", "core") from exc
            try:
                tokenizer, model = self._load_pretrained()
            except JudgeError:
                raise
            except Exception as exc:
                raise JudgeError(f"Could not load the judge model {self.model!r}: {exc}") from exc
            tokenizer.truncation_side = self.truncation_side
            model.eval()
            model.to(self.device)
            id2label = self.label_map or {int(k): v for k, v in model.config.id2label.items()}
            labels = [label_from_name(id2label.get(i, "")) for i in range(model.config.num_labels)]
            if Label.CONTRADICTION not in labels:
                raise JudgeError(
                    f"The judge model {self.model!r} has no contradiction class in config.id2label "
                    f"({id2label}). Pass label_map={{index: 'contradiction', ...}}."
                )
            # classes we cannot name are "not a contradiction"
            self._labels = [lab if lab is not None else Label.NOT_CONTRADICTION for lab in labels]
            self._contradiction = labels.index(Label.CONTRADICTION)
            if self.quantize == "int8":
                with warnings.catch_warnings():
                    # torch 2.13 marks the quantized tensor API as deprecated; dynamic int8 still works and is faster
                    warnings.filterwarnings("ignore", message=".*quantiz", category=UserWarning)
                    warnings.filterwarnings("ignore", category=DeprecationWarning)
                    model = torch.ao.quantization.quantize_dynamic(
                        model, {torch.nn.Linear}, dtype=torch.qint8
                    )
            self._tokenizer = tokenizer
            self._model = model

    def _load_pretrained(self) -> tuple[Any, Any]:
        """``(tokenizer, model)`` for :attr:`model`; subclasses with another file layout override this."""
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.model)
        model = AutoModelForSequenceClassification.from_pretrained(self.model, dtype=torch.float32)
        return tokenizer, model

    # -- inference -----------------------------------------------------------------------------------------------
    def logits(self, pairs: Sequence[tuple[str, str]], /) -> NDArray[np.float32]:
        """Raw (uncalibrated) class logits, shape ``(len(pairs), n_classes)``, float32.

        Raises:
            InvalidInputError: malformed pairs.
            JudgeError: the model failed to load or to run.
        """
        clean = check_pairs(pairs, owner=type(self).__name__)
        if not clean:
            return np.zeros((0, max(len(self._labels), 1)), dtype=np.float32)
        self._load()
        import torch

        old_threads = torch.get_num_threads()
        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        try:
            # sort by length so a batch pads little; restore the order at the end
            order = sorted(range(len(clean)), key=lambda i: len(clean[i][0]) + len(clean[i][1]))
            out = np.zeros((len(clean), len(self._labels)), dtype=np.float32)
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    idx = order[start : start + self.batch_size]
                    enc = self._tokenizer(
                        [clean[i][0] for i in idx],
                        [clean[i][1] for i in idx],
                        truncation="longest_first",
                        max_length=self.max_length,
                        padding=True,
                        return_tensors="pt",
                    ).to(self.device)
                    out[idx] = self._model(**enc).logits.float().cpu().numpy()
        except Exception as exc:
            raise JudgeError(f"The judge {self.name!r} failed to score a batch: {exc}") from exc
        finally:
            if self.num_threads is not None:
                torch.set_num_threads(old_threads)
        return out

    def probabilities(self, pairs: Sequence[tuple[str, str]], /) -> NDArray[np.float32]:
        """Calibrated class probabilities, shape ``(len(pairs), n_classes)``; columns follow :attr:`labels`."""
        logits = self.logits(pairs) / self.temperature
        if logits.shape[0] == 0:
            return logits
        logits = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    @property
    def labels(self) -> list[Label]:
        """Label of each model class (loads the model)."""
        self._load()
        return list(self._labels)

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """Judge a batch: does each hypothesis contradict its premise?

        Args:
            pairs: ``(premise, hypothesis)`` tuples.

        Returns:
            One :class:`~memlab.records.Verdict` per pair, same order; ``probability`` is the calibrated
            probability of the contradiction class and ``label`` the most probable class (or, with a
            ``decision_threshold``, ``contradiction`` iff that probability reaches the threshold).

        Raises:
            InvalidInputError: malformed pairs (nothing is scored).
            JudgeError: the model failed to load or to run.
        """
        probs = self.probabilities(pairs)
        if probs.shape[0] == 0:
            return []
        c = self._contradiction
        top = probs.argmax(axis=1)
        if self.decision_threshold is not None:
            other = np.where(np.arange(probs.shape[1]) == c, -1.0, probs).argmax(axis=1)
            top = np.where(probs[:, c] >= self.decision_threshold, c, other)
        return [
            Verdict(label=self._labels[int(k)], probability=float(p[c]), judge=self.name)
            for k, p in zip(top, probs, strict=True)
        ]

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (recorded in eval runs)."""
        return {
            "model": self.model,
            "name": self.name,
            "temperature": self.temperature,
            "label_map": self.label_map,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            "truncation_side": self.truncation_side,
            "decision_threshold": self.decision_threshold,
            "quantize": self.quantize,
            "num_threads": self.num_threads,
            "device": self.device,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, temperature={self.temperature:.3f})"
