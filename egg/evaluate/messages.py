"""The schemas of every message between harness, judge and runner.

The runner runs candidate code, so everything it sends is untrusted: :func:`parse_runner` accepts
a frame only if it is exactly one of the ``Runner*`` models (unknown fields are refused, strings
and lists are bounded). A runner can say "ready", "built", "done, these event times, this output
structure" or "this error text"; none of that is a verdict. What the judge accepts is decided by
the outputs it reads from its own buffers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from egg.evaluate.verdict import StageFailed, TimingStats, TrialResult

Text = Annotated[str, Field(max_length=4000)]
Name = Annotated[str, Field(max_length=300)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BackendFlags(Strict):
    """PyTorch's backend precision switches an evaluation runs under (recorded in the verdict)."""

    matmul_allow_tf32: bool = False
    cudnn_allow_tf32: bool = True  # PyTorch's default


class Node(Strict):
    """One node of a nested structure of tensors and values (inputs or outputs).

    ``kind``: ``tensor`` (``buf`` names a shared buffer, or ``shape``/``dtype``/``device``/``type``
    describe a candidate's tensor), ``value`` (a JSON scalar), ``dtype``, ``seq`` (``type`` is
    tuple or list), ``dict`` (``keys`` and ``items``), or ``other`` (anything else, by type name).
    """

    kind: Literal["tensor", "value", "dtype", "seq", "dict", "other"]
    type: Name | None = None
    buf: int | None = None
    shape: Annotated[list[int], Field(max_length=64)] | None = None
    dtype: Name | None = None
    device: Name | None = None
    value: bool | int | float | str | None = None
    keys: Annotated[list[Name], Field(max_length=4096)] | None = None
    items: Annotated[list[Node], Field(max_length=4096)] | None = None


class BufferSpec(Strict):
    """How a runner maps one judge-owned buffer: a file (CPU), CUDA IPC handle args, or host memory
    mirrored on the device (the fallback when CUDA IPC does not work on a machine)."""

    id: int
    transport: Literal["file", "cuda-ipc", "host-mirror"]
    shape: list[int]
    stride: list[int]
    dtype: Name
    device: Name
    path: str | None = None
    ipc: dict[str, Any] | None = None


# -- judge -> runner -------------------------------------------------------------------------


class Load(Strict):
    op: Literal["load"] = "load"
    candidate_path: str
    problem_source: str
    problem_name: Name
    device: Name
    flags: BackendFlags
    build_dir: str


class Build(Strict):
    op: Literal["model"] = "model"
    shape_set: Name
    overrides: dict[str, Any]
    seed: int


class MapBuffers(Strict):
    op: Literal["buffers"] = "buffers"
    buffers: list[BufferSpec]
    outputs: Node  # the reference's output structure; tensor leaves name their slot buffers


class Call(Strict):
    op: Literal["call"] = "call"
    mode: Literal["trial", "timed", "null", "ablate"]
    index: int
    inputs: Node


class Warmup(Strict):
    op: Literal["warmup"] = "warmup"
    inputs: Node
    calls: int
    min_ms: float


class Profile(Strict):
    op: Literal["profile"] = "profile"
    inputs: Node
    calls: int


class Probe(Strict):
    """The judge's transport self-test: the runner maps ``buffer`` and adds one to it."""

    op: Literal["probe"] = "probe"
    buffer: BufferSpec


# -- runner -> judge (untrusted) -------------------------------------------------------------


class RunnerHello(Strict):
    op: Literal["hello"]
    pid: int
    isolation: Annotated[list[Text], Field(max_length=16)] = Field(default_factory=list)


class RunnerBuild(Strict):
    op: Literal["build"]
    event: Literal["start", "done"]


class RunnerOk(Strict):
    op: Literal["ok"]
    notes: Annotated[list[Text], Field(max_length=16)] = Field(default_factory=list)


class RunnerFailed(Strict):
    op: Literal["failed"]
    stage: StageFailed
    reason: Text
    fatal_cuda: bool = False


class RunnerDone(Strict):
    op: Literal["done"]
    event_ms: float | None = None
    output: Node | None = None
    launches: Annotated[dict[Name, int], Field(max_length=512)] = Field(default_factory=dict)
    side_stream: Annotated[list[Name], Field(max_length=16)] = Field(default_factory=list)
    aliases: Annotated[list[tuple[int, int]], Field(max_length=256)] = Field(default_factory=list)
    poisoned: int = 0  # ablation: launches whose writes were replaced by poison


class RunnerProfile(Strict):
    op: Literal["profile"]
    generated_ms: float
    library_ms: float
    kernels: Annotated[dict[Name, float], Field(max_length=256)] = Field(default_factory=dict)


RunnerMessage = RunnerHello | RunnerBuild | RunnerOk | RunnerFailed | RunnerDone | RunnerProfile
_RUNNER = TypeAdapter(Annotated[RunnerMessage, Field(discriminator="op")])
RUNNER_MAX_FRAME = 1024 * 1024


class InvalidMessage(Exception):
    """A runner frame that is not one of the schemas: the judge treats the runner as broken."""


def parse_runner(raw: dict[str, Any]) -> RunnerMessage:
    try:
        return _RUNNER.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidMessage(f"{where or 'message'}: {first.get('msg', 'invalid')}") from None


# -- harness <-> judge (both trusted) --------------------------------------------------------


class JudgeJob(Strict):
    problem_path: str  # the harness's read-only copy
    problem_sha256: str
    problem_name: Name
    candidate_path: str = ""
    log_path: str = ""
    device: Name = "cpu"
    shape_sets: list[tuple[str, dict[str, Any]]]
    trials: int = 5
    timing_runs: int = 100
    warmup_runs: int = 10
    seed: int = 0
    tolerance: Any = None
    flags: BackendFlags = Field(default_factory=BackendFlags)
    time_compile: bool = True
    build_dir: str = ""
    timeout_s: float = 300.0
    build_timeout_s: float = 900.0
    reference_only: bool = False
    gpu_time_split: bool = True
    fp32_route: bool = True  # fp16/bf16/fp32 outputs may pass against an exact run (egg.evaluate.anchor)


class JudgeResult(Strict):
    stage_failed: StageFailed | None = None
    reasons: list[str] = Field(default_factory=list)
    kernels_launched: list[str] = Field(default_factory=list)
    trials: list[TrialResult] = Field(default_factory=list)
    timing: dict[str, TimingStats] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    timed_shape_set: str | None = None
    launches_per_call: int | None = None
    floor_ms: float | None = None
    floor_bytes: int | None = None
    judge_clock_ms: float | None = None
    null_call_ms: float | None = None
    clock_sets: list[list[list[float]]] = Field(default_factory=list)
    checked_timed_calls: int | None = None
    generated_gpu_ms: float | None = None
    library_gpu_ms: float | None = None
    transport: str | None = None
    isolation: list[str] = Field(default_factory=list)
    ablation: str | None = None
    phase_s: dict[str, float] = Field(default_factory=dict)
    # GPU only: the judge process's peak reserved device memory in this evaluation (its buffers,
    # private copies and the reference's; not the runner's), and the device's total memory
    peak_device_bytes: int | None = None
    phase_peak_bytes: dict[str, int] = Field(default_factory=dict)  # the same, per phase
    device_total_bytes: int | None = None
    start_device_bytes: int | None = None
