"""How often does an honest bf16 attention miss eager's tolerance, and does the exact route take it?
(evidence for condition 1 of egg/evaluate/anchor.py, its band widened by eager's error per element).

Emulates, on the CPU, a chained attention ``softmax(q @ k.mT * 0.1) @ v`` in bf16 computed with
eager's roundings (bf16 scores, bf16 scaled scores, bf16 probabilities, bf16 output) but another
summation order (fp64 dots, rounded once: what a tensor-core tile with fp32 accumulators does to the
same values), on fresh inputs per seed, and judges each output with the judge's own functions: the
plain comparison with eager, then the exact route against the fp32 run (condition 1: no more misses
of the exact result than eager's, none past the tolerance plus eager's worst). Beside it, for each
output that missed eager, two stricter bands the route had or considered: the tolerance alone
around the exact result (before 2026-12-07) and the tolerance plus eager's error at the same element.

    python benchmarks/attention_flip_probe.py --seeds 40 --out benchmarks/results/cpu/attention_flip_probe.json
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from egg.evaluate.anchor import judge_against_exact  # noqa: E402
from egg.evaluate.correctness import compare_outputs  # noqa: E402
from egg.tolerance import resolve_tolerances  # noqa: E402


def _reordered(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Eager's roundings, another order of the sums (fp64, rounded once)."""
    s = (q.double() @ k.double().mT).bfloat16() * 0.1
    e = torch.exp(s.float() - s.float().amax(-1, keepdim=True))
    p = (e / e.double().sum(-1, keepdim=True).float()).bfloat16()
    return (p.double() @ v.double()).bfloat16()


def _outside(got: torch.Tensor, exact: torch.Tensor, widen: torch.Tensor | None = None) -> int:
    """Elements outside atol = rtol = 1e-2 of the exact result, the band grown by ``widen``'s error
    at each element when given."""
    x = exact.double()
    band = 1e-2 + 1e-2 * x.abs() + ((widen.double() - x).abs() if widen is not None else 0)
    return int(((got.double() - x).abs() > band).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--shape", default="8,12,197,80", help="batch,heads,sequence,head dim")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    shape = tuple(int(d) for d in args.shape.split(","))
    tol = resolve_tolerances(None)
    rows = []
    for seed in range(args.seeds):
        torch.manual_seed(seed)
        q, k, v = (torch.randn(*shape, dtype=torch.bfloat16) * 1.5 for _ in range(3))
        eager = torch.softmax(q @ k.mT * 0.1, -1) @ v
        exact = torch.softmax(q.float() @ k.float().mT * 0.1, -1) @ v.float()
        got = _reordered(q, k, v)
        plain = compare_outputs(eager, got, tol)
        if plain.ok:
            continue
        routed = judge_against_exact(eager, got, exact, tol)
        rows.append({"seed": seed, "plain": plain.reason, "route_ok": routed.ok,
                     "route": routed.reason or routed.note,
                     "outside_tolerance": _outside(got, exact), "eager_outside_tolerance": _outside(eager, exact),
                     "outside_tolerance_plus_eagers_error_there": _outside(got, exact, eager)})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit,
              "machine": f"{platform.node()} ({platform.processor() or platform.machine()}, CPU)",
              "torch": torch.__version__, "shape": shape, "seeds": args.seeds,
              "plain_failures": len(rows), "route_accepts": sum(r["route_ok"] for r in rows),
              "tolerance_only_accepts": sum(r["outside_tolerance"] == 0 for r in rows),
              "per_element_band_accepts": sum(r["outside_tolerance_plus_eagers_error_there"] == 0 for r in rows),
              "failures": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    sys.stdout.write(f"{len(rows)} of {args.seeds} seeds miss eager's tolerance; the exact route accepts "
                     f"{result['route_accepts']} of them -> {args.out}\n")


if __name__ == "__main__":
    main()
