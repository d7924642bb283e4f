"""The scheduler's placement is a function of the graph: the same problem gives the same kernels,
in the same order, in every process (a candidate's source is what the caches, the memory and the
judge's archive key on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from expert_helpers import WORKLOADS

_RENDER = """
import hashlib, random, sys
from pathlib import Path
random.seed(int(sys.argv[2]))
junk = [object() for _ in range(random.randint(0, 5000))]  # moves what follows to other addresses
random.shuffle(junk)
del junk[::2]
from agents.expert.design import design_candidates
cands = design_candidates(Path(sys.argv[1]), "default", "cpu")
print(hashlib.sha1("".join(c.source for c in cands).encode()).hexdigest())
"""


def test_candidates_are_the_same_in_every_process() -> None:
    """Cross-entropy's less-fused variant has independent reductions whose kernels a set of steps
    used to order by address: before the fix, five of six processes rendered different sources."""
    root = Path(__file__).resolve().parents[3]
    path = WORKLOADS / "cross_entropy_large_vocab.py"
    digests = {subprocess.run([sys.executable, "-c", _RENDER, str(path), str(seed)], cwd=root, check=True,
                              capture_output=True, text=True).stdout.strip().splitlines()[-1]
               for seed in (1, 2, 3)}
    assert len(digests) == 1, digests
