"""best_of: the fastest on a GPU; on a CPU a rule that never looks at agent names or ids."""

from __future__ import annotations

from egg.graph.records import CandidateRecord, best_of


def record(id_: str, *, stage: str = "algorithm_design", kernels: int | None = 1, ms: float | None = None,
           accepted: bool = True) -> CandidateRecord:
    return CandidateRecord(id=id_, stage=stage, round=1, agent=id_.split("-")[1], focus="structure",
                           structure="x", source_sha256=id_, accepted=accepted, kernels=kernels,
                           candidate_ms=ms, timing_comparable=ms is not None)


def test_on_cpu_an_llm_answer_and_an_expert_draft_compete_by_rule_not_by_name():
    llm, expert = record("s1r1-llm-designer-1-0"), record("s1r1-expert-designer-0")
    # equal on stage and kernels: the first evaluated wins, whichever name sorts first
    assert best_of([llm, expert]) is llm
    assert best_of([expert, llm]) is expert
    # fewer distinct kernels (more fused) wins over evaluation order
    two_kernels = record("s1r1-expert-designer-0", kernels=2)
    assert best_of([two_kernels, llm]) is llm
    # a refined candidate wins over an unrefined one
    tuned = record("s2r1-llm-tiling-0", stage="hardware_tuning", kernels=3)
    assert best_of([expert, tuned]) is tuned
    assert best_of([record("a-b", accepted=False)]) is None


def test_on_gpu_the_fastest_wins():
    slow, fast = record("s1r1-expert-designer-0", ms=2.0), record("s1r1-llm-designer-1-0", ms=1.0, kernels=4)
    assert best_of([slow, fast]) is fast


def _verdict(eager: float, comp: float, ms: float, *, shape_set: str = "default", gpu: bool = True):
    from egg.evaluate.verdict import Verdict

    return Verdict(accepted=True, candidate_ms=ms, eager_ms=eager, compile_ms=comp, speedup_vs_eager=eager / ms,
                   speedup_vs_compile=comp / ms, device="cuda" if gpu else "cpu", timing_comparable=gpu,
                   timed_shape_set=shape_set)


BASELINE = {"eager_ms": 9.89, "compile_ms": 9.91, "timing_comparable": True, "shape_set": "default"}


def test_a_job_whose_references_ran_slow_is_scored_against_the_runs_baseline():
    """Red team: a job's eager and torch.compile 1.48x slower than the run's reference-only
    measurement (cuDNN short of workspace memory, which a candidate holding memory could arrange;
    H200, 2026-12-05, level 1 #76) must not make the candidate 1.48x faster: the faster reference
    counts, and the record says so."""
    from agents.protocol import Draft
    from egg.graph.records import make_record
    from egg.vocabulary import Focus, Stage

    draft = Draft(agent="expert", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source="x", structure="s")
    slow_job = make_record("c1", draft, 1, _verdict(14.64, 14.64, 4.635), None, baseline=BASELINE)
    assert slow_job.compile_ms == 9.91 and abs(slow_job.speedup_vs_compile - 9.91 / 4.635) < 1e-9
    assert slow_job.eager_ms == 9.89 and abs(slow_job.speedup_vs_eager - 9.89 / 4.635) < 1e-9
    assert any("torch.compile ran 14.64 ms, 1.48x the run's baseline" in n for n in slow_job.notes), slow_job.notes
    # a job that measured the references faster than the baseline keeps its own, without a note
    fast_job = make_record("c2", draft, 1, _verdict(9.5, 9.6, 4.0), None, baseline=BASELINE)
    assert (fast_job.eager_ms, fast_job.compile_ms, fast_job.notes) == (9.5, 9.6, [])
    # another shape set timed, a CPU run, or no baseline: the job's own references
    for verdict, base in ((_verdict(14.64, 14.64, 4.635, shape_set="large"), BASELINE),
                          (_verdict(14.64, 14.64, 4.635, gpu=False), BASELINE), (_verdict(14.64, 14.64, 4.635), None)):
        own = make_record("c3", draft, 1, verdict, None, baseline=base)
        assert own.compile_ms == 14.64 and abs(own.speedup_vs_compile - 14.64 / 4.635) < 1e-9
