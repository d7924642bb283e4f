"""Stage summaries and history carry the profiler's bottleneck statement of the winner."""

from __future__ import annotations

from egg.context import compress_history, summarize_stage
from egg.graph.records import CandidateRecord


def record(cid: str, ms: float, evidence: str | None = None, **kw) -> CandidateRecord:
    return CandidateRecord(id=cid, stage="algorithm_design", round=1, agent="expert", focus="structure",
                           structure=f"structure {cid}", source_sha256=cid, accepted=True, candidate_ms=ms,
                           eager_ms=1.0, speedup_vs_eager=1.0 / ms, timing_comparable=True, evidence=evidence,
                           evidence_source="roofline" if evidence else None, **kw)


def test_the_winner_brings_its_roofline_line() -> None:
    records = [record("a", 0.5, "memory-bound at 0.40 of the 4.3 TB/s memory roofline"),
               record("b", 0.25, "memory-bound at 0.80 of the 4.3 TB/s memory roofline")]
    summary = summarize_stage(records, "algorithm_design")
    assert summary.best_id == "b" and summary.evidence_source == "roofline"
    assert "What limits it (roofline): memory-bound at 0.80 of the 4.3 TB/s memory roofline." in summary.text


def test_a_profile_of_the_winner_replaces_it() -> None:
    records = [record("b", 0.25, "memory-bound at 0.80 of the 4.3 TB/s memory roofline")]
    summary = summarize_stage(records, "algorithm_design",
                              evidence=("memory-bound at 0.83 of DRAM peak; L2 hit 12% (ncu)", "ncu"))
    assert summary.evidence_source == "ncu"
    assert "What limits it (ncu): memory-bound at 0.83 of DRAM peak; L2 hit 12% (ncu)." in summary.text


def test_no_evidence_on_cpu() -> None:
    summary = summarize_stage([record("a", 3.0).model_copy(update={"timing_comparable": False})], "algorithm_design")
    assert summary.evidence is None and "What limits it" not in summary.text


def test_history_names_what_limits_the_best() -> None:
    text = compress_history([record("a", 0.5, "latency-bound: 0.004 ms moving 0.1 MB")])
    assert "What limits it: latency-bound: 0.004 ms moving 0.1 MB" in text
