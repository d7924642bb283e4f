"""Tables for BENCHMARKS.md from a GPU sweep directory (benchmarks/h200_sweep.sh).

Reads ``SWEEP/kb-level{N}/suite.json`` (written by ``egg kernelbench``), each problem's
``report.json`` (roofline, bottleneck, wall time) and ``SWEEP/workloads-gpu*.json``
(benchmarks/expert_workloads.py); writes one JSON with everything and prints Markdown tables:
KernelBench fast_p against eager and torch.compile, per-problem rows, the workloads, and the
issue-5 targets (accepted fractions, geomeans, memory-bound roofline fractions, wall per problem).

    python benchmarks/sweep_tables.py SWEEP_DIR --out benchmarks/results/h200_sweep.json \
        [--summary benchmarks/results/h200/summary.json]

``--summary`` writes issue 13's summary (one sweep at one commit): ``{"date", "commit", "suites":
{"workloads" | "kernelbench_level1" | "kernelbench_level2" | "transformers": {"problems", "correct",
"geomean_vs_eager", "geomean_vs_compile", "fast_1_vs_compile"}}}``. The transformers suite is read
from ``SWEEP/transformers.json`` (benchmarks/expert_workloads.py --problems benchmarks/transformers).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from egg.evaluate.rejection import OWN_OUT_OF_MEMORY, is_out_of_memory

ROOFLINE_TARGET = 0.85  # issue 5: memory-bound kernels at >= 85% of the 4.3 TB/s roofline


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _report(artifact: str | None, sweep: Path) -> dict[str, Any]:
    """The problem's report.json inside the sweep folder (the same folder names under SWEEP: a
    sweep unpacked elsewhere), else at the artifact path. The sweep's own copy comes first: an
    artifact path the sweep ran under (/tmp/sweep/...) can hold another sweep's reports on the
    machine that tabulates (2026-12-05: an H200 sweep's baselines were read into the H100's rows)."""
    if not artifact:
        return {}
    parts = Path(artifact).parts
    hits = [sweep.joinpath(*parts[i:]) / "report.json" for i in range(1, len(parts))]
    path = next((h for h in hits if h.is_file()), Path(artifact) / "report.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def _why(reasons: list[str]) -> str:
    text = " ".join((reasons or [""])[0].split())
    return text[:140].replace("|", "/")


def roofline_on(analysis: dict[str, Any], bandwidth: float | None) -> float | None:
    """The roofline time in ms on the sweep's GPU. The analysis's ``roofline_ms`` is the H200's
    (egg/analysis/models.py); a memory-bound problem's is its minimum bytes over ``bandwidth``
    (bytes/s, the device table's memory roofline: egg.device.KNOWN_GPUS), so a sweep on another
    card reports fractions of that card's roofline (an H100's is 3.35 TB/s: the H200's 4.3 made its
    fractions read 0.78 of what they are)."""
    roof, min_bytes = analysis.get("roofline_ms"), analysis.get("min_bytes")
    if bandwidth and analysis.get("bottleneck") == "memory" and min_bytes:
        return min_bytes / bandwidth * 1e3
    return roof


def kernelbench_rows(sweep: Path, level: int, bandwidth: float | None = None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    suite_path = sweep / f"kb-level{level}" / "suite.json"
    if not suite_path.is_file():
        return None, []
    suite = json.loads(suite_path.read_text())
    rows = []
    for r in sorted(suite["results"], key=lambda r: r["problem_id"]):
        rep = _report(r.get("artifact"), sweep)
        analysis = rep.get("analysis", {})
        best = rep.get("best") or {}
        roof = roofline_on(analysis, bandwidth)
        base = rep.get("baseline") or {}  # a problem without an accepted candidate still has its baseline
        eager, comp, sp_eager, sp_comp = faster_references(r.get("eager_ms"), r.get("compile_ms"), r.get("candidate_ms"),
                                                           base, r.get("speedup_vs_eager"), r.get("speedup_vs_compile"))
        rows.append({
            "level": level, "id": r["problem_id"], "name": r["problem_name"].removesuffix(".py"),
            "accepted": r["correctness"], "candidate_ms": r.get("candidate_ms"),
            "eager_ms": eager or base.get("eager_ms"), "compile_ms": comp or base.get("compile_ms"), "speedup_vs_eager": sp_eager,
            "speedup_vs_compile": sp_comp, "bottleneck": analysis.get("bottleneck"),
            "roofline_ms": roof, "roofline_fraction": roof / r["candidate_ms"] if roof and r.get("candidate_ms") else None,
            "structure": best.get("structure"), "wall_s": r.get("run_wall_s") or rep.get("wall_s"),
            "why_not": None if r["correctness"] else _why(r.get("reasons", [])),
        })
    return suite, rows


def faster_references(eager: float | None, comp: float | None, ms: float | None, base: dict[str, Any],
                      sp_eager: float | None, sp_comp: float | None) -> tuple[Any, Any, Any, Any]:
    """The faster of the best candidate's job's references and the run's baseline measurement, and
    the speedups against them (egg.graph.records.references, applied to sweeps whose reports
    predate it: a job's cuDNN reference ran 1.48x slow on 2026-12-05, short of workspace memory)."""
    if not (base.get("timing_comparable") and ms and sp_comp is not None):
        return eager, comp, sp_eager, sp_comp
    eager = min(eager, base["eager_ms"]) if eager and base.get("eager_ms") else eager
    comp = min(comp, base["compile_ms"]) if comp and base.get("compile_ms") else comp
    return eager, comp, (eager / ms if eager else sp_eager), (comp / ms if comp else sp_comp)


def job_spread(rep: dict[str, Any], best_ms: float | None) -> dict[str, Any]:
    """torch.compile's time in every job of a run (each job times it beside its candidate).

    Small, host-bound kernels vary from job to job; the headline speedup divides the best
    candidate's time by its own job's compile time (side by side), and this shows how much that
    ratio would move against the median compile time of all the run's jobs instead.
    """
    times = sorted(c["compile_ms"] for c in rep.get("candidates", []) if c.get("compile_ms"))
    if rep.get("baseline", {}).get("compile_ms"):
        times = sorted(times + [rep["baseline"]["compile_ms"]])
    if not times or not best_ms:
        return {}
    median = statistics.median(times)
    return {"compile_ms_jobs": [times[0], median, times[-1]], "jobs": len(times),
            "speedup_vs_compile_median_job": median / best_ms}


def workload_rows(sweep: Path, pattern: str = "workloads-gpu*.json", bandwidth: float | None = None) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted(sweep.glob(pattern)):
        data = json.loads(path.read_text())
        for r in data.get("rows", data.get("partial", [])):
            if "skipped" not in r:
                rows[r["workload"]] = r
    out = []
    for name, r in sorted(rows.items()):
        rep = _report(str(sweep / "workload-runs" / name), sweep)  # kept when the sweep ran with --runs
        bottleneck = r.get("bottleneck") or rep.get("analysis", {}).get("bottleneck")
        roof = roofline_on({"bottleneck": bottleneck, "roofline_ms": r.get("roofline_ms"), "min_bytes": r.get("min_bytes")},
                           bandwidth)
        best = r.get("best_ms")
        own = rep.get("best") or {}  # the best candidate's own job (older rows carried the baseline job's times)
        eager, comp, sp_eager, sp_comp = faster_references(
            own.get("eager_ms", r.get("eager_ms")), own.get("compile_ms", r.get("compile_ms")), best,
            rep.get("baseline") or {}, r.get("speedup_vs_eager"), r.get("speedup_vs_compile"))
        out.append({**r, "roofline_ms": roof, "eager_ms": eager, "compile_ms": comp, "speedup_vs_eager": sp_eager, "speedup_vs_compile": sp_comp,
                    "roofline_fraction": roof / best if roof and best else None,
                    "bottleneck": bottleneck, **job_spread(rep, best)})
    return out


def summary(kb: dict[int, list[dict[str, Any]]], workloads: list[dict[str, Any]]) -> dict[str, Any]:
    everything = [r for rows in kb.values() for r in rows] + [
        {**w, "candidate_ms": w.get("best_ms"), "bottleneck": w.get("bottleneck")} for w in workloads]
    memory = [r for r in everything if r.get("accepted") and r.get("roofline_fraction") is not None
              and r.get("bottleneck") == "memory"]
    walls = [r["wall_s"] for r in everything if r.get("wall_s")]
    return {
        **{f"level{lvl}_accepted": f"{sum(r['accepted'] for r in rows)}/{len(rows)}" for lvl, rows in kb.items()},
        "workloads_accepted": f"{sum(bool(w.get('accepted')) for w in workloads)}/{len(workloads)}",
        "workloads_geomean_vs_eager": geomean([w.get("speedup_vs_eager") for w in workloads if w.get("accepted")]),
        "workloads_geomean_vs_compile": geomean([w.get("speedup_vs_compile") for w in workloads if w.get("accepted")]),
        "workloads_geomean_vs_median_job_compile": geomean(
            [w.get("speedup_vs_compile_median_job") for w in workloads if w.get("accepted")]),
        "memory_bound_at_target": f"{sum(r['roofline_fraction'] >= ROOFLINE_TARGET for r in memory)}/{len(memory)}",
        "wall_s_median": sorted(walls)[len(walls) // 2] if walls else None,
        "wall_s_max": max(walls) if walls else None,
    }


def suite_summary(rows: list[dict[str, Any]], ok_key: str, candidate_key: str) -> dict[str, Any]:
    """One suite's line of issue 13's summary: counts, geomeans over correct problems, fast_1 vs compile
    (the share of *all* problems that are correct and faster than torch.compile)."""
    correct = [r for r in rows if r.get(ok_key)]
    faster = [r for r in correct if (r.get("speedup_vs_compile") or 0) > 1.0]
    return {
        "problems": len(rows), "correct": len(correct),
        "geomean_vs_eager": geomean([r.get("speedup_vs_eager") for r in correct]),
        "geomean_vs_compile": geomean([r.get("speedup_vs_compile") for r in correct]),
        "fast_1_vs_compile": len(faster) / len(rows) if rows else None,
        "below_0.9x_vs_compile": sorted(str(r.get("id", r.get("workload"))) for r in correct
                                        if (r.get("speedup_vs_compile") or 0) < 0.9),
    }


def out_of_memory_rejections(verdicts: list[Path]) -> dict[str, int]:
    """Candidates rejected for device out-of-memory: ``alone`` ones had the device to themselves (no
    other EGG evaluation, in any process, held it: the verdict's note, egg/evaluate/device_lease.py),
    so the error is theirs; the ``unresolved`` ones may have been run out of memory by another
    process on the GPU (the sweep of 2026-12-02 lost 31 candidates that way, the one at 50ff989 on
    2026-12-04 13, each re-run "alone" by its own harness beside another harness), and a suite with
    any is not a measurement of the kernels. Verdicts from before the lease have no such note: their
    out-of-memory rejections are unresolved."""
    counts = {"alone": 0, "unresolved": 0}
    for path in verdicts:
        v = json.loads(path.read_text())
        if v.get("accepted") or not any(is_out_of_memory(r) for r in v.get("reasons", [])):
            continue
        counts["alone" if any(n.startswith(OWN_OUT_OF_MEMORY) for n in v.get("notes", [])) else "unresolved"] += 1
    return counts


def sweep_commits(rows: list[dict[str, Any]]) -> list[str]:
    """The commits the rows recorded, an abbreviated hash folded into the full one it starts (a sweep
    that spans sessions was given ``EGG_COMMIT`` both ways: one commit, not two)."""
    named = {str(r["commit"]) for r in rows if r.get("commit")}
    return sorted(c for c in named if not any(o != c and o.startswith(c) for o in named))


def issue13_summary(sweep: Path, kb: dict[int, list[dict[str, Any]]], workloads: list[dict[str, Any]],
                    transformers: list[dict[str, Any]]) -> dict[str, Any]:
    from datetime import datetime, timezone

    commits = sweep_commits(workloads + transformers)
    suites: dict[str, Any] = {}
    runs = {"workloads": "workload-runs", "transformers": "transformers-runs"}
    if workloads:
        suites["workloads"] = suite_summary(workloads, "accepted", "best_ms")
    for level, rows in kb.items():
        suites[f"kernelbench_level{level}"] = suite_summary(rows, "accepted", "candidate_ms")
        runs[f"kernelbench_level{level}"] = f"kb-level{level}/level{level}"
    if transformers:
        suites["transformers"] = suite_summary(transformers, "accepted", "best_ms")
    for name, line in suites.items():
        line["out_of_memory_rejections"] = out_of_memory_rejections(
            sorted((sweep / runs[name]).glob("*/candidates/*/verdict.json")))
    invalid = sorted(n for n, line in suites.items() if line["out_of_memory_rejections"]["unresolved"])
    return {"date": datetime.now(timezone.utc).date().isoformat(), "commit": commits[0] if len(commits) == 1 else commits,
            "sweep": str(sweep), "suites": suites, "invalid_suites": invalid}


def markdown(suites: dict[int, dict[str, Any]], kb: dict[int, list[dict[str, Any]]], workloads: list[dict[str, Any]],
             summ: dict[str, Any]) -> str:
    lines: list[str] = []
    for lvl, suite in suites.items():
        m = suite["metrics"]
        lines += [f"#### KernelBench level {lvl}: {m['correct']}/{m['total']} correct "
                  f"(compiled {m['compiled']}/{m['total']})", "",
                  "| baseline | fast_0 | fast_0.5 | fast_0.8 | fast_1 | fast_1.5 | fast_2 | geomean (correct) |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for key in ("vs_eager", "vs_compile"):
            b = m[key]
            fp = [b["fast_p"][p] for p in ("0.0", "0.5", "0.8", "1.0", "1.5", "2.0")]
            lines.append(f"| {b['baseline']} | " + " | ".join(f"{v:.2f}" for v in fp) + f" | {b['geo_mean_speedup']:.2f}x |")
        lines += ["", "| id | problem | ok | best ms | eager ms | compile ms | vs eager | vs compile | bound | roofline frac | wall s | why not accepted |",
                  "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
        for r in kb[lvl]:
            frac = "-" if r["roofline_fraction"] is None else f"{r['roofline_fraction']:.2f}"
            wall = "-" if r["wall_s"] is None else f"{r['wall_s']:.0f}"
            lines.append(f"| {r['id']} | {r['name']} | {'yes' if r['accepted'] else 'no'} | {_ms(r['candidate_ms'])} | "
                         f"{_ms(r['eager_ms'])} | {_ms(r['compile_ms'])} | {_x(r['speedup_vs_eager'])} | "
                         f"{_x(r['speedup_vs_compile'])} | {r['bottleneck'] or '-'} | {frac} | {wall} | {r['why_not'] or ''} |")
        lines.append("")
    if workloads:
        lines += ["#### Workloads", "",
                  "| workload | ok | best ms | eager ms | compile ms | vs eager | vs compile | compile ms, all jobs (min/median/max) | vs median-job compile | bound | roofline ms | roofline frac | wall s | why not accepted |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
        for w in workloads:
            frac = "-" if w["roofline_fraction"] is None else f"{w['roofline_fraction']:.2f}"
            why = "" if w.get("accepted") else _why(w.get("rejections") or [w.get("error", "")])
            jobs = w.get("compile_ms_jobs")
            spread = "-" if not jobs else f"{jobs[0]:.3f} / {jobs[1]:.3f} / {jobs[2]:.3f} ({w['jobs']})"
            lines.append(f"| {w['workload']} | {'yes' if w.get('accepted') else 'no'} | {_ms(w.get('best_ms'))} | "
                         f"{_ms(w.get('eager_ms'))} | {_ms(w.get('compile_ms'))} | {_x(w.get('speedup_vs_eager'))} | "
                         f"{_x(w.get('speedup_vs_compile'))} | {spread} | {_x(w.get('speedup_vs_compile_median_job'))} | "
                         f"{w.get('bottleneck') or '-'} | {_ms(w.get('roofline_ms'))} | {frac} | "
                         f"{w.get('wall_s', 0):.0f} | {why} |")
        lines.append("")
    lines += ["#### Summary", "", "| measure | value |", "| --- | --- |"]
    for k, v in summ.items():
        lines.append(f"| {k} | {v if not isinstance(v, float) else f'{v:.2f}'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--summary", type=Path, default=None, help="issue 13's summary.json")
    parser.add_argument("--gpu", default=None, help="the GPU the sweep ran on (nvidia-smi's name): memory-bound "
                        "roofline fractions against its row of the device table (default: the H200's)")
    args = parser.parse_args()
    bandwidth = None
    if args.gpu:
        from egg.device import find_gpu

        spec = find_gpu(args.gpu)
        if spec is None:
            sys.stderr.write(f"--gpu: {args.gpu!r} is not in the device table (egg.device.KNOWN_GPUS)\n")
            return 2
        bandwidth = spec.memory_bytes_per_s
    suites: dict[int, dict[str, Any]] = {}
    kb: dict[int, list[dict[str, Any]]] = {}
    for level in (1, 2, 3):
        suite, rows = kernelbench_rows(args.sweep, level, bandwidth)
        if suite is not None:
            suites[level], kb[level] = suite, rows
    workloads = workload_rows(args.sweep, bandwidth=bandwidth)
    transformers = workload_rows(args.sweep, "transformers*.json", bandwidth)
    summ = summary(kb, workloads)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        issue13 = {**issue13_summary(args.sweep, kb, workloads, transformers), "gpu": args.gpu or "H200 (assumed)"}
        args.summary.write_text(json.dumps(issue13, indent=2))
        for name in issue13["invalid_suites"]:
            n = issue13["suites"][name]["out_of_memory_rejections"]["unresolved"]
            sys.stderr.write(f"{args.summary}: suite {name}: {n} candidates rejected for out of memory that were not "
                             "re-run alone; its figures may be another process's memory, not the kernels\n")
    if args.out:
        args.out.write_text(json.dumps({"summary": summ, "kernelbench": {str(k): {"metrics": s["metrics"], "rows": kb[k]}
                                                                         for k, s in suites.items()},
                                        "workloads": workloads, "transformers": transformers}, indent=2))
    sys.stdout.write(markdown(suites, kb, workloads, summ))
    if transformers:
        sys.stdout.write("\n#### transformers modules\n\n" + markdown({}, {}, transformers, {}).split("#### Summary")[0]
                         .replace("#### Workloads", "").lstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
