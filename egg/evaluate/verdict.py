"""The harness's answer about one candidate: a pydantic model, printed as JSON by ``egg eval``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# "infrastructure": no judge reached a verdict (a judge, Ray actor or node lost twice mid-evaluation,
# a judge past its own deadline, or one whose own allocations ran out of device memory); it says
# nothing about the kernel and is never a rejection. Its reason starts with NOT_JUDGED.
StageFailed = Literal["load", "static", "compile", "correctness", "timing", "crash", "timeout", "infrastructure"]
NOT_JUDGED = "infrastructure failure, not a verdict on the kernel"


class TimingStats(BaseModel):
    """Milliseconds per call over ``runs`` timed calls (after warm-up, L2 flushed before each)."""

    median_ms: float
    mean_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    runs: int


class TrialResult(BaseModel):
    """One correctness trial on fresh inputs."""

    shape_set: str
    seed: int
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    detail: str | None = None


class Verdict(BaseModel):
    accepted: bool
    stage_failed: StageFailed | None = None
    reasons: list[str] = Field(default_factory=list)
    candidate_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    device: str
    timing_comparable: bool = False
    timing: dict[str, TimingStats] = Field(
        default_factory=dict, description="'candidate', 'eager', 'compile' -> stats"
    )
    backend: Literal["triton", "cuda", "pytorch", "unknown"] = "unknown"
    kernels_launched: list[str] = Field(default_factory=list)
    trials: list[TrialResult] = Field(default_factory=list)
    shape_sets: list[str] = Field(default_factory=list)
    timed_shape_set: str | None = None
    seed: int | None = None
    notes: list[str] = Field(default_factory=list)
    problem: str | None = None
    candidate: str | None = None
    archive_dir: str | None = None
    wall_s: float | None = None
    harness_overhead_s: float | None = Field(
        default=None, description="wall seconds of the evaluation outside the timed calls"
    )
    egg_version: str | None = None
    # -- added with the judge/runner split (issue 16) ------------------------------------------
    problem_sha256: str | None = Field(default=None, description="hash of the problem copy the judge read")
    backend_flags: dict[str, bool] = Field(
        default_factory=dict, description="torch.backends TF32 switches reference and candidate ran under"
    )
    launches_per_call: int | None = Field(
        default=None, description="generated-kernel launches in one forward call (first shape set, after warm-up)"
    )
    floor_ms: float | None = Field(default=None, description="physics floor: bytes that must move / spec bandwidth")
    floor_bytes: int | None = Field(default=None, description="bytes counted for the floor (outputs + inputs read)")
    judge_clock_ms: float | None = Field(
        default=None, description="25th percentile of wall time per timed call beyond the null call before it, on the judge's clock"
    )
    null_call_ms: float | None = Field(default=None, description="median wall time of the protocol's null call")
    clock_sets: list[list[list[float]]] = Field(
        default_factory=list,
        description="the judge's clock, raw: per set of timed calls, [null wall, timed wall, reported event] ms per call")
    checked_timed_calls: int | None = Field(default=None, description="timed calls whose outputs the judge compared")
    generated_gpu_ms: float | None = Field(default=None, description="GPU time per call in generated kernels")
    library_gpu_ms: float | None = Field(default=None, description="GPU time per call in library kernels")
    transport: str | None = Field(default=None, description="how buffers were shared: file, cuda-ipc, host-mirror")
    isolation: list[str] = Field(default_factory=list, description="what isolated the candidate in this run")
    ablation: str | None = Field(default=None, description="what the kernel-ablation call showed")
    phase_s: dict[str, float] = Field(
        default_factory=dict, description="judge-side seconds per phase: runner start (fork), load, trials, timing, ..."
    )
    peak_device_bytes: int | None = Field(
        default=None, description="GPU: the judge's peak reserved device memory in this evaluation (not the runner's)"
    )
    phase_peak_bytes: dict[str, int] = Field(
        default_factory=dict, description="GPU: the judge's peak reserved device memory per phase (trials, compile, "
                                          "timing, ablation, ...): which step set peak_device_bytes"
    )
    start_device_bytes: int | None = Field(
        default=None, description="GPU: device memory the judge still held when this evaluation began (0 unless an "
                                  "earlier one left some behind)"
    )
    # -- added with the executors (issue 15) ---------------------------------------------------
    worker: str | None = Field(default=None, description="where the verdict was reached: a local judge's GPU, or a Ray node and GPU")

    def summary(self) -> str:
        """One line for logs and progress displays."""
        if not self.accepted:
            first = self.reasons[0] if self.reasons else "rejected"
            if self.stage_failed == "infrastructure":
                return f"not judged: {first}"
            return f"rejected at {self.stage_failed}: {first}"
        if self.speedup_vs_eager is not None:
            comp = f", {self.speedup_vs_compile:.2f}x vs compile" if self.speedup_vs_compile else ""
            tag = "" if self.timing_comparable else " (CPU interpreter: not comparable)"
            return f"accepted: {self.speedup_vs_eager:.2f}x vs eager{comp}{tag}"
        return "accepted"
