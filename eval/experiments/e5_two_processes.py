"""Two processes embedding with e5 at once: 40 single-text embeds each, alone and side by side.

Run: `python eval/experiments/e5_two_processes.py` (it starts the child processes itself). The processes memlab
owns (the CLI, ``memlab serve``, the dashboard) set OMP_WAIT_POLICY=PASSIVE at start (memlab.process); the script
also runs the children with ACTIVE to show what that avoids.
2026-11-25, idle 2-core machine, two runs: ACTIVE alone 0.85-0.97 s, side by side 3.8-5.9 s; PASSIVE alone
0.96-1.00 s, side by side 1.4-1.7 s (OMP_NUM_THREADS=1: alone 1.6 s, side by side 1.3-1.6 s). The default judge
(torch) scored 300 SNLI pairs at 128 pairs/s with ACTIVE and 120 with PASSIVE in one run each.
"""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = """
import sys, time
from memlab.embedding import load_embedder
emb = load_embedder("e5")
emb.embed(["riscaldamento"])
texts = [f"Nota numero {i}: abito a Roma e lavoro in banca da {i} anni" for i in range(40)]
t = time.perf_counter()
for x in texts:
    emb.embed([x])
print(f"{time.perf_counter() - t:.2f}")
"""


def run(policy: str, n: int) -> list[str]:
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    return [p.communicate()[0].strip() + " s" for p in procs]


if __name__ == "__main__":
    for policy in ("ACTIVE", "PASSIVE"):
        print(f"{policy:8s} alone: {run(policy, 1)}   side by side: {run(policy, 2)}")
