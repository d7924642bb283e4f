"""Expert agents (no LLM) over the shipped workloads: accepted?, speedup vs eager and vs torch.compile.

Each workload runs through the full graph (`run_optimization`, expert agents, one shared device)
at its production shape; eager, torch.compile (default mode) and the candidate are timed side by
side in the same worker by the harness. Results are written after every workload, and the run
stops starting new workloads once ``--deadline`` seconds have passed, so a bounded GPU lease
still returns everything measured.

    python benchmarks/expert_workloads.py --out results.json [--budget candidates=6] [--deadline 420]
    python benchmarks/expert_workloads.py --problems benchmarks/transformers --out transformers.json

``--problems DIR`` runs every problem file of DIR (files starting with ``_`` are helpers) instead of
the shipped workloads; rows are named by file stem either way.
"""

from __future__ import annotations

import argparse
import os
import json
import math
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from egg.cli.memory_cmd import add_memory_options, read_memory  # noqa: E402
from egg.cli.profile_args import add_profile_option  # noqa: E402
from egg.config import RunConfig, default_budget, parse_budget  # noqa: E402
from egg.logging import configure_logging  # noqa: E402
from egg.run import run_optimization  # noqa: E402
from workloads import list_workloads  # noqa: E402


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _commit() -> str | None:
    """The git commit measured (EGG_COMMIT when the tree travelled without .git)."""
    import os
    import subprocess

    if os.environ.get("EGG_COMMIT"):
        return os.environ["EGG_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", default=None, help="default: the expert agents' default budget")
    parser.add_argument("--deadline", type=float, default=420.0)
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--problems", type=Path, default=None, help="a folder of problem files instead of workloads/")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shapes", default=None, help="shape set (default: production)")
    parser.add_argument("--runs", type=Path, default=None, help="keep run directories here (default: discarded)")
    parser.add_argument("--resume", action="store_true", help="keep finished rows of --out; run the rest")
    parser.add_argument("--principles", action="append", default=[], metavar="PATH",
                        help="an extra principle pack (repeatable), as `egg optimize --principles`")
    add_profile_option(parser)
    add_memory_options(parser, record_only=True)
    args = parser.parse_args()
    configure_logging(level=os.environ.get("EGG_LOG_LEVEL", "warning"))  # info: phase times on stderr
    import torch

    start = time.monotonic()
    rows: list[dict] = []
    names = [n for n in args.only.split(",") if n]
    if args.problems is not None:
        found = sorted(p for p in args.problems.glob("*.py") if not p.name.startswith("_"))
        available = [SimpleNamespace(name=p.stem, path=p) for p in found]
    else:
        available = list_workloads()
    chosen = [w for w in available if not names or w.name in names]
    finished: dict[str, dict] = {}
    if args.resume and args.out.is_file():
        previous = json.loads(args.out.read_text())
        finished = {r["workload"]: r for r in previous.get("rows", previous.get("partial", []))
                    if "skipped" not in r and "error" not in r}
    # finished rows of workloads this call was not given stay in --out (a resumed lane with a
    # shorter --only lost them until 2026-12-03)
    kept = [r for name, r in finished.items() if name not in {w.name for w in chosen}]
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.runs or Path(tmp)
        for w in chosen:
            if w.name in finished:
                rows.append(finished[w.name])
                continue
            if time.monotonic() - start > args.deadline:
                rows.append({"workload": w.name, "skipped": "deadline"})
                continue
            t0 = time.monotonic()
            config = RunConfig(device=args.device, budget=parse_budget(args.budget, default_budget("none")), shapes=args.shapes,
                               profile=args.profile, principles=args.principles,
                               memory=str(args.memory) if args.memory else None, use_memory=not args.no_memory,
                               read_memory=read_memory(args))
            try:
                run_dir = runs / w.name
                if run_dir.exists():  # an unfinished run of an earlier, interrupted call
                    shutil.rmtree(run_dir)
                report = run_optimization(w.path, config, run_dir)
                best = report.best
                rows.append({
                    "workload": w.name, "accepted": best is not None,
                    "candidates": len(report.candidates), "accepted_candidates": sum(c.accepted for c in report.candidates),
                    "best_structure": best.structure if best else None,
                    "best_ms": best.candidate_ms if best else None,
                    # the best candidate's own job: the eager and compile times its speedups divide
                    "eager_ms": best.eager_ms if best else report.baseline.get("eager_ms"),
                    "compile_ms": best.compile_ms if best else report.baseline.get("compile_ms"),
                    "speedup_vs_eager": report.speedup_vs_eager, "speedup_vs_compile": report.speedup_vs_compile,
                    "roofline_ms": report.analysis.get("roofline_ms"), "min_bytes": report.analysis.get("min_bytes"),
                    "rejections": [r["reasons"][0][:200] for r in report.rejected if r["reasons"]][:4],
                    "wall_s": time.monotonic() - t0,
                    "commit": _commit(),
                })
            except Exception as exc:  # noqa: BLE001 - a benchmark records failures, it does not stop
                rows.append({"workload": w.name, "accepted": False, "error": f"{type(exc).__name__}: {exc}"[:300],
                             "wall_s": time.monotonic() - t0})
            print(json.dumps(rows[-1]), flush=True)
            args.out.write_text(json.dumps({"partial": rows + kept}, indent=2))
    rows += kept
    done = [r for r in rows if "skipped" not in r]
    result = {
        "benchmark": "expert_workloads",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "machine": {"gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                    "torch": torch.__version__, "python": platform.python_version()},
        "budget": parse_budget(args.budget, default_budget("none")).model_dump(),
        "accepted_fraction": sum(bool(r.get("accepted")) for r in done) / max(1, len(done)),
        "geomean_vs_eager": geomean([r.get("speedup_vs_eager") for r in done if r.get("accepted")]),
        "geomean_vs_compile": geomean([r.get("speedup_vs_compile") for r in done if r.get("accepted")]),
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{'workload':28} {'ok':3} {'best ms':>9} {'eager':>9} {'compile':>9} {'vs eager':>8} {'vs comp':>8}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['workload']:28} skipped ({r['skipped']})")
            continue
        f = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        x = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
        print(f"{r['workload']:28} {'yes' if r.get('accepted') else 'no':3} {f(r.get('best_ms')):>9} {f(r.get('eager_ms')):>9} "
              f"{f(r.get('compile_ms')):>9} {x(r.get('speedup_vs_eager')):>8} {x(r.get('speedup_vs_compile')):>8}")
    print(f"accepted {result['accepted_fraction']:.0%}; geomean vs eager {result['geomean_vs_eager']}, vs compile {result['geomean_vs_compile']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
