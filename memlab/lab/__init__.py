"""Research code: how memlab's shipped artefacts are made and measured, kept apart from the runtime.

- :mod:`memlab.lab.judge_training`: ``memlab train-judge`` (fine-tuning and calibrating the contradiction judges;
  resumable from a checkpoint kept outside the repository).
- :mod:`memlab.lab.detector_tuning`: ``memlab tune-detector`` (the detector's thresholds, chosen on DECODE dev
  dialogues only).
- :mod:`memlab.lab.augment`: synthetic memory-style pairs used as training data.
- :mod:`memlab.lab.calibrate`: ``memlab calibrate-embedder`` (per-embedder similarity thresholds) and the
  candidate-stage benchmark.
- :mod:`memlab.lab.bench`: performance benchmarks (store, integrity, agent, judge speed, peer systems).

Runtime packages (``memlab.store``, ``memlab.judges``, ``memlab.embedding``...) never import this package: they read
only the files it produces and the repository ships (judge weights with their cards, calibration JSON).
"""
