"""Every variant the expert designs for a problem, judged (CPU: the Triton interpreter).

The corpus and KernelBench-like tests judge each problem's *first* candidate; the other variants
(the Triton GEMMs, conv-gemm, less-fused, ...) reach the judge only in a run that picks them. This
judges all of them on one shape set, so a wrong variant shows before a GPU run spends minutes on it
(2026-12-06: BERT's Linear + LayerNorm epilogue divided the mean by 1 in `triton-matmul-ieee`, and
only such a sweep over transformers' modules and the corpus found it).

    TRITON_INTERPRET=1 python benchmarks/variant_check.py PROBLEM.py [...] [--shape-set small] [--device cpu] [--out X.json]

One line per variant: accepted or the judge's reason, and the kernels it launches. Exit 1 if any
variant was rejected, 2 on bad input. A check of correctness, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--shape-set", default="small", help="the problem's shape set to design and judge on")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--out", type=Path, help="write the rows as JSON")
    args = ap.parse_args()
    for p in args.problems:
        if not p.is_file():
            print(f"error: {p}: no such problem file", file=sys.stderr)
            return 2

    from egg.logging import configure_logging

    configure_logging(level=os.environ.get("EGG_LOG_LEVEL", "warning"))
    from agents.expert import design_candidates
    from agents.expert.decline import ExpertDecline
    from egg.evaluate.harness import EvalOptions, Harness

    rows: list[dict[str, object]] = []
    with Harness(args.device) as harness, tempfile.TemporaryDirectory() as scratch:
        for p in args.problems:
            try:
                candidates = design_candidates(p, args.shape_set, args.device)
            except ExpertDecline as exc:
                rows.append({"problem": str(p), "variant": None, "accepted": None, "reason": f"declined: {exc}"})
                print(f"{p.stem}: declined: {exc}")
                continue
            for c in candidates:
                where = Path(scratch) / p.stem / c.variant
                where.mkdir(parents=True, exist_ok=True)
                (where / "candidate.py").write_text(c.source)
                options = EvalOptions(device=args.device, timeout_s=300, shapes=args.shape_set)
                v = harness.evaluate(p, where / "candidate.py", options, where)
                reason = "" if v.accepted else f"{v.stage_failed}: {'; '.join(v.reasons)[:300]}"
                rows.append({"problem": str(p), "variant": c.variant, "kernels": c.kernels, "accepted": v.accepted,
                             "reason": reason})
                print(f"{p.stem} {c.variant}: {'accepted' if v.accepted else 'REJECTED ' + reason} "
                      f"({c.kernels} kernel launch(es) planned)")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 1 if any(r["accepted"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
