"""Stage summaries: what a stage settled, with numbers, for the next stage's agents and the report."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from egg.context.history import normalize_reason
from egg.context.tokens import fit_tokens
from egg.graph.records import CandidateRecord, best_of


class StageSummary(BaseModel):
    stage: str
    evaluated: int
    accepted: int
    best_id: str | None = None
    best_structure: str | None = None
    best_ms: float | None = None
    best_speedup_vs_eager: float | None = None
    best_speedup_vs_compile: float | None = None
    timing_comparable: bool = False
    ranking: list[str] = Field(default_factory=list)  # accepted candidates, best first, one line each
    failures: list[str] = Field(default_factory=list)  # de-duplicated reasons with counts
    evidence: str | None = None  # the profiler's bottleneck statement for the winner (GPU)
    evidence_source: str | None = None  # "ncu" or "roofline"
    text: str = ""


def _speed(record: CandidateRecord) -> str:
    if not record.timing_comparable:
        return "timing not comparable (CPU interpreter)"
    parts = []
    if record.candidate_ms is not None:
        parts.append(f"{record.candidate_ms:.4g} ms")
    if record.speedup_vs_eager:
        parts.append(f"{record.speedup_vs_eager:.2f}x vs eager")
    if record.speedup_vs_compile:
        parts.append(f"{record.speedup_vs_compile:.2f}x vs torch.compile")
    return ", ".join(parts) or "no timing"


def summarize_stage(records: list[CandidateRecord], stage: str, budget_tokens: int = 800,
                    evidence: tuple[str, str] | None = None) -> StageSummary:
    """``evidence``: (statement, source) of a profile of the winner; default: its roofline line."""
    mine = [r for r in records if r.stage == stage]
    accepted = [r for r in mine if r.accepted]
    best = best_of(mine)
    comparable = bool(accepted) and all(r.timing_comparable for r in accepted)
    ranked = sorted(accepted, key=lambda r: r.candidate_ms or float("inf")) if comparable else accepted
    if best is not None and best in ranked:
        ranked = [best] + [r for r in ranked if r is not best]
    failures = Counter(
        f"{r.stage_failed}: {normalize_reason(r.reasons[0] if r.reasons else 'rejected')}"
        for r in mine
        if not r.accepted
    )
    summary = StageSummary(
        stage=stage,
        evaluated=len(mine),
        accepted=len(accepted),
        best_id=best.id if best else None,
        best_structure=best.structure if best else None,
        best_ms=best.candidate_ms if best else None,
        best_speedup_vs_eager=best.speedup_vs_eager if best else None,
        best_speedup_vs_compile=best.speedup_vs_compile if best else None,
        timing_comparable=comparable,
        ranking=[f"{r.id} ({r.agent}): {r.structure} — {_speed(r)}" for r in ranked],
        failures=[f"{n}x {reason}" for reason, n in failures.most_common()],
    )
    if evidence is None and best is not None and best.evidence:
        evidence = (best.evidence, best.evidence_source or "roofline")
    if best is not None and evidence is not None:
        summary.evidence, summary.evidence_source = evidence
    lines = [f"Stage {stage}: {len(mine)} candidates evaluated, {len(accepted)} accepted."]
    if best is not None:
        why = "fastest measured" if comparable else "chosen by rule: CPU timings are not comparable"
        lines.append(f"Winning structure ({why}): {best.structure} [{best.id}] — {_speed(best)}.")
        if best.principle_ids:
            lines.append(f"Principles it applied: {', '.join(best.principle_ids)}.")
        if summary.evidence:
            lines.append(f"What limits it ({summary.evidence_source}): {summary.evidence}.")
    else:
        lines.append("No candidate was accepted in this stage.")
    if len(summary.ranking) > 1:
        lines.append("Other accepted structures:")
        lines += [f"- {r}" for r in summary.ranking[1:]]
    if summary.failures:
        lines.append("Rejections (de-duplicated):")
        lines += [f"- {f}" for f in summary.failures]
    summary.text = fit_tokens(lines, budget_tokens)
    return summary
