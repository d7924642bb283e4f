"""benchmarks/sweep_tables.py: which out-of-memory rejections void a sweep's suite."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from egg.evaluate.rejection import OWN_OUT_OF_MEMORY

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "sweep_tables.py"
OOM = "correctness: OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB."


def _module():
    spec = importlib.util.spec_from_file_location("sweep_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_only_an_out_of_memory_with_the_device_to_itself_is_the_candidates(tmp_path):
    verdicts = {
        # the sweep at 50ff989: re-run "alone" by its own harness while another egg process held 43 GiB
        "before_the_lease": {"accepted": False, "reasons": [OOM], "notes": [
            "re-run alone on its device with a new seed: the first attempt ran out of device memory"]},
        "own": {"accepted": False, "reasons": [OOM], "notes": [
            f"{OWN_OUT_OF_MEMORY}: no other EGG evaluation held it meanwhile"]},
        "accepted_after_a_re_run": {"accepted": True, "reasons": [], "notes": ["re-run alone on its device"]},
        "other_rejection": {"accepted": False, "reasons": ["correctness: max abs error 3.1"], "notes": []},
    }
    paths = []
    for name, v in verdicts.items():
        path = tmp_path / name / "verdict.json"
        path.parent.mkdir()
        path.write_text(json.dumps(v))
        paths.append(path)
    assert _module().out_of_memory_rejections(paths) == {"alone": 1, "unresolved": 1}


def test_a_sweep_scores_against_the_faster_of_the_job_and_the_baseline():
    """Reports written before egg.graph.records.references kept a job's slow references (level 1
    #76 on 2026-12-05: 14.64 ms in the candidate's job, 9.91 in the run's baseline): the tables
    take the faster, and recompute the speedups from it."""
    faster = _module().faster_references
    base = {"eager_ms": 9.89, "compile_ms": 9.91, "timing_comparable": True}
    eager, comp, sp_eager, sp_comp = faster(14.64, 14.64, 4.635, base, 3.159, 3.160)
    assert (eager, comp) == (9.89, 9.91) and abs(sp_comp - 9.91 / 4.635) < 1e-9 and abs(sp_eager - 9.89 / 4.635) < 1e-9
    assert faster(9.5, 9.6, 4.0, base, 2.375, 2.4) == (9.5, 9.6, 9.5 / 4.0, 9.6 / 4.0)
    assert faster(14.64, 14.64, 4.635, {}, 3.159, 3.160) == (14.64, 14.64, 3.159, 3.160)  # no baseline kept
    assert faster(None, None, None, base, None, None) == (None, None, None, None)  # nothing accepted


def test_memory_bound_fractions_are_of_the_sweeps_own_gpu(tmp_path):
    # the H100 sweep of 2026-12-05: the analysis's roofline is the H200's 4.3 TB/s, so an H100's
    # memory-bound kernels read 0.78 of their fraction of its own 3.35 TB/s
    from egg.device import find_gpu

    tables = _module()
    h100 = find_gpu("NVIDIA H100 80GB HBM3").memory_bytes_per_s
    memory = {"bottleneck": "memory", "min_bytes": 134217728, "roofline_ms": 134217728 / 4.3e12 * 1e3}
    compute = {"bottleneck": "compute", "min_bytes": 134217728, "roofline_ms": 0.5}
    assert tables.roofline_on(memory, None) == memory["roofline_ms"]
    assert abs(tables.roofline_on(memory, h100) - 134217728 / h100 * 1e3) < 1e-12
    assert tables.roofline_on(memory, h100) > memory["roofline_ms"]
    assert tables.roofline_on(compute, h100) == 0.5  # a compute-bound row keeps the analysis's bound
    run = tmp_path / "sweep" / "workload-runs" / "causal_softmax"
    run.mkdir(parents=True)
    (tmp_path / "sweep" / "workloads-gpu0.json").write_text(json.dumps({"rows": [
        {"workload": "causal_softmax", "accepted": True, "best_ms": 0.04, "bottleneck": "memory", **memory}]}))
    row, = tables.workload_rows(tmp_path / "sweep", bandwidth=h100)
    assert abs(row["roofline_fraction"] - 134217728 / h100 * 1e3 / 0.04) < 1e-9


def test_a_problems_report_is_read_from_the_sweep_being_tabulated(tmp_path):
    # 2026-12-05: the H100 sweep's rows named artifacts under /tmp/sweep, where an older H200 sweep
    # lay unpacked on the tabulating machine, and its baselines were read instead
    tables = _module()
    stale = tmp_path / "tmp" / "sweep" / "kb-level1" / "level1" / "51_Argmax"
    ours = tmp_path / "unpacked" / "sweep" / "kb-level1" / "level1" / "51_Argmax"
    for folder, eager in ((stale, 2.727), (ours, 3.222)):
        folder.mkdir(parents=True)
        (folder / "report.json").write_text(json.dumps({"baseline": {"eager_ms": eager}}))
    assert tables._report(str(stale), tmp_path / "unpacked" / "sweep")["baseline"]["eager_ms"] == 3.222
    # a sweep without its own copy still finds the report where it ran
    assert tables._report(str(stale), tmp_path / "elsewhere")["baseline"]["eager_ms"] == 2.727


def test_an_abbreviated_commit_is_the_commit_it_abbreviates():
    # the H100 sweep of 95eb3a4 (2026-12-05 to 12-06): rows from sessions given the short and the long hash
    full = "95eb3a4408b40fb7ac2fe32eb5ee92e6390a236a"
    commits = _module().sweep_commits
    assert commits([{"commit": "95eb3a4"}, {"commit": full}, {"commit": None}]) == [full]
    assert commits([{"commit": "95eb3a4"}, {"commit": "de901bd"}]) == ["95eb3a4", "de901bd"]  # two commits stay two
