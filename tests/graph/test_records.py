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
