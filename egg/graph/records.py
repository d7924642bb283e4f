"""Candidates as the graph sees them: a draft plus the harness's verdict, stored in the run dir.

``RUN_DIR/candidates/<id>/`` holds ``candidate.py``, ``verdict.json``, ``worker.log`` and
``draft.json``. A verdict is reused whenever the same source was evaluated before in this run
(keyed by its SHA-256), so a resumed run or a duplicate draft never re-runs an evaluation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agents.protocol import Draft
from egg.evaluate.verdict import Verdict


class CandidateRecord(BaseModel):
    id: str
    stage: str
    round: int
    agent: str
    focus: str
    structure: str
    principle_ids: list[str] = Field(default_factory=list)
    parent_id: str | None = None
    source_sha256: str
    accepted: bool
    stage_failed: str | None = None
    reasons: list[str] = Field(default_factory=list)
    candidate_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    timing_comparable: bool = False
    kernels: int | None = None  # distinct Triton/CUDA kernels the candidate launched (the CPU tie-break)
    reused_verdict_of: str | None = None  # id of the candidate whose identical source was evaluated
    evidence: str | None = None  # one-line bottleneck statement (accepted GPU candidates)
    evidence_source: str | None = None  # "roofline" or "ncu"
    notes: list[str] = Field(default_factory=list)

    def line(self) -> str:
        if self.accepted:
            sp = f"{self.speedup_vs_eager:.2f}x vs eager" if self.speedup_vs_eager else "accepted"
            return f"{self.id} [{self.agent}] {self.structure}: {sp}"
        first = self.reasons[0] if self.reasons else "rejected"
        return f"{self.id} [{self.agent}] {self.structure}: rejected at {self.stage_failed}: {first}"


def source_sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def candidate_dir(run_dir: Path, candidate_id: str) -> Path:
    return run_dir / "candidates" / candidate_id


def read_source(run_dir: Path, candidate_id: str) -> str:
    return (candidate_dir(run_dir, candidate_id) / "candidate.py").read_text(encoding="utf-8")


def write_draft(run_dir: Path, candidate_id: str, draft: Draft) -> Path:
    folder = candidate_dir(run_dir, candidate_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "candidate.py"
    if not path.exists() or path.read_text(encoding="utf-8") != draft.source:
        path.write_text(draft.source, encoding="utf-8")
    (folder / "draft.json").write_text(draft.model_dump_json(indent=2, exclude={"source"}))
    return path


def find_verdict(run_dir: Path, sha: str) -> tuple[str, Verdict] | None:
    """A verdict of an earlier candidate with the same source, if any (the evaluation cache)."""
    index = run_dir / "candidates" / "index.jsonl"
    if not index.exists():
        return None
    for line in index.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["sha"] == sha:
            verdict_path = candidate_dir(run_dir, entry["id"]) / "verdict.json"
            if verdict_path.exists():
                return entry["id"], Verdict.model_validate_json(verdict_path.read_text())
    return None


def index_verdict(run_dir: Path, candidate_id: str, sha: str) -> None:
    index = run_dir / "candidates" / "index.jsonl"
    index.parent.mkdir(parents=True, exist_ok=True)
    with index.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": candidate_id, "sha": sha}) + "\n")


BASELINE_DRIFT = 1.10  # a job's reference this much slower than the run's baseline measurement is noted


def references(verdict: Verdict, baseline: Mapping[str, Any] | None) -> tuple[float | None, float | None, list[str]]:
    """The eager and torch.compile times a candidate's speedups are taken against: its own job's,
    unless the run's baseline measurement (the analyze step's reference-only job, with no candidate
    process on the device) was faster for the timed shape set; then that one, and a note.

    Why: on the H200 (2026-12-05, KernelBench level 1 #76) one job's eager and torch.compile ran
    14.64 ms where the run's baseline and the other job measured 9.89-9.92: cuDNN falls back to an
    algorithm with a smaller workspace when the device's free memory is short, and the memory
    other processes hold (a candidate's runner among them) decides that. A speedup against the
    slower reference would be 1.48x too high, and a candidate that holds memory on purpose could
    make it so. The faster of the two is never the candidate's doing."""
    eager, comp = verdict.eager_ms, verdict.compile_ms
    base = baseline or {}
    if not (verdict.timing_comparable and base.get("timing_comparable")) or \
            (verdict.timed_shape_set or "default") != (base.get("shape_set") or "default"):
        return eager, comp, []
    notes = []
    for label, job, run in (("eager", eager, base.get("eager_ms")), ("torch.compile", comp, base.get("compile_ms"))):
        if job and run and job > run * BASELINE_DRIFT:
            notes.append(f"this job's {label} ran {job:.4g} ms, {job / run:.2f}x the run's baseline measurement "
                         f"({run:.4g} ms): speedups are taken against the faster")
    pick = (lambda job, run: min(job, run) if job and run else job)  # noqa: E731 - two uses, one line
    return pick(eager, base.get("eager_ms")), pick(comp, base.get("compile_ms")), notes


def make_record(candidate_id: str, draft: Draft, round_no: int, verdict: Verdict, reused: str | None,
                baseline: Mapping[str, Any] | None = None) -> CandidateRecord:
    eager, comp, notes = references(verdict, baseline)
    ms = verdict.candidate_ms if verdict.accepted else None
    return CandidateRecord(
        id=candidate_id,
        stage=draft.stage.value,
        round=round_no,
        agent=draft.agent,
        focus=draft.focus.value,
        structure=draft.structure,
        principle_ids=draft.principle_ids,
        parent_id=draft.parent_id,
        source_sha256=source_sha(draft.source),
        accepted=verdict.accepted,
        stage_failed=verdict.stage_failed,
        reasons=verdict.reasons,
        candidate_ms=verdict.candidate_ms,
        eager_ms=eager,
        compile_ms=comp,
        speedup_vs_eager=eager / ms if ms and eager and verdict.speedup_vs_eager else verdict.speedup_vs_eager,
        speedup_vs_compile=comp / ms if ms and comp and verdict.speedup_vs_compile else verdict.speedup_vs_compile,
        timing_comparable=verdict.timing_comparable,
        kernels=len(verdict.kernels_launched) if verdict.kernels_launched else None,
        reused_verdict_of=reused,
        notes=[*draft.notes, *notes],
    )


CPU_TIE_BREAK = ("a refined (stage-2) candidate before an unrefined one, then the fewest distinct "
                 "kernels launched (the most fused), then the first evaluated")


def best_of(records: list[CandidateRecord]) -> CandidateRecord | None:
    """The best accepted candidate.

    With comparable (GPU) timings: the fastest. On CPU the interpreter's timings mean nothing, so
    the rule is structural (:data:`CPU_TIE_BREAK`): later stage first, then fewer distinct kernels,
    then evaluation order (``records`` are in creation order). It never looks at agent names or
    ids, so an LLM's answer and an expert's draft compete on the same terms.
    """
    accepted = [(i, r) for i, r in enumerate(records) if r.accepted]
    if not accepted:
        return None
    if all(r.timing_comparable and r.candidate_ms for _, r in accepted):
        return min((r for _, r in accepted), key=lambda r: r.candidate_ms or float("inf"))

    def rank(item: tuple[int, CandidateRecord]) -> tuple[bool, float, int]:
        index, r = item
        return (r.stage != "hardware_tuning", r.kernels or float("inf"), index)

    return min(accepted, key=rank)[1]
