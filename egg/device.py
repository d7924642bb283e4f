"""Device facts: what the GPU we tune for can do, read from the device where torch exposes it.

What torch reports (``torch.cuda.get_device_properties``) comes from the device: the SM count,
shared memory per block (the opt-in maximum a kernel may request), the L2 size, and the memory
bandwidth the bus can carry (``memory_bus_width`` bits x ``memory_clock_rate`` x 2 for double
data rate). What no property says comes from a table of known GPUs (:data:`KNOWN_GPUS`): the
bandwidth a copy really reaches and the peak FLOP rates per dtype. Principle packs can add or
replace table entries (a ``devices:`` section, see ``principles/README.md``), so a user with
another GPU gives its ceilings as data.

Without a CUDA device (CPU runs, the Triton interpreter) the H200 defaults stand in, and the facts
say so (``source == "defaults"`` and a note): the problem is still tuned *for* an H200.

Sources of the built-in numbers: "measured" means this project's H200 SXM measurements on
2026-11-29 (``shared/device/NOTES.md``: a device-to-device copy counting bytes read plus written,
and a dense bf16 GEMM); everything else is NVIDIA's datasheets, dense rates (their headline
tensor-core numbers assume 2:4 sparsity, which no kernel here uses). A spot check on the H200
(torch 2.11, 8192^3 GEMM, 1 GiB copy) gave copy 4.25 TB/s, bf16 805, fp16 766, tf32 414 and fp32
cuBLAS SGEMM 51 TFLOP/s: the table is a bound, so the datasheet rates stay where they are higher.
"""

from __future__ import annotations

from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

log = structlog.get_logger(__name__)

# The keys of a peak-FLOP table: which units do the work, and in which dtype.
FlopKind = Literal["bf16_tensor", "fp16_tensor", "tf32_tensor", "fp32", "fp64"]


class GpuSpec(BaseModel):
    """What a known GPU can do where its properties do not say (a row of the table)."""

    model_config = ConfigDict(extra="forbid")

    match: str = Field(description="matches a device whose name contains it (case-insensitive)")
    arch: str = Field(description="CUDA arch, e.g. sm_90")
    sm_count: int = Field(gt=0)
    shared_memory_per_block: int = Field(gt=0, description="bytes a block may opt in to")
    l2_bytes: int = Field(gt=0)
    memory_bytes_per_s: float = Field(gt=0, description="the memory roofline: what a copy reaches")
    memory_spec_bytes_per_s: float | None = Field(default=None, gt=0, description="the datasheet bandwidth")
    peak_flops: dict[FlopKind, float] = Field(default_factory=dict, description="FLOP/s by kind, dense")
    source: str = Field(description="where the numbers come from, one line")


KNOWN_GPUS: list[GpuSpec] = [
    GpuSpec(
        match="H200", arch="sm_90", sm_count=132, shared_memory_per_block=232448, l2_bytes=50 * 2**20,
        memory_bytes_per_s=4.3e12, memory_spec_bytes_per_s=4.8e12,
        peak_flops={"bf16_tensor": 790e12, "fp16_tensor": 790e12, "tf32_tensor": 495e12, "fp32": 67e12,
                    "fp64": 34e12},
        source="measured on our H200 SXM (copy 4.3 TB/s, bf16 GEMM 790 TFLOP/s); tf32, fp32, fp64 and L2 "
               "from NVIDIA's H200 datasheet",
    ),
    # The PCIe card must come before the SXM one: "H100" is a substring of both names.
    GpuSpec(
        match="H100 PCIe", arch="sm_90", sm_count=114, shared_memory_per_block=232448, l2_bytes=50 * 2**20,
        memory_bytes_per_s=2.0e12, memory_spec_bytes_per_s=2.0e12,
        peak_flops={"bf16_tensor": 756e12, "fp16_tensor": 756e12, "tf32_tensor": 378e12, "fp32": 51e12,
                    "fp64": 26e12},
        source="NVIDIA H100 PCIe datasheet (not measured here)",
    ),
    GpuSpec(
        match="H100", arch="sm_90", sm_count=132, shared_memory_per_block=232448, l2_bytes=50 * 2**20,
        memory_bytes_per_s=3.35e12, memory_spec_bytes_per_s=3.35e12,
        peak_flops={"bf16_tensor": 989e12, "fp16_tensor": 989e12, "tf32_tensor": 495e12, "fp32": 67e12,
                    "fp64": 34e12},
        source="NVIDIA H100 SXM datasheet (not measured here)",
    ),
    GpuSpec(
        match="A100", arch="sm_80", sm_count=108, shared_memory_per_block=166912, l2_bytes=40 * 2**20,
        memory_bytes_per_s=2.039e12, memory_spec_bytes_per_s=2.039e12,
        peak_flops={"bf16_tensor": 312e12, "fp16_tensor": 312e12, "tf32_tensor": 156e12, "fp32": 19.5e12,
                    "fp64": 9.7e12},
        source="NVIDIA A100 80GB SXM datasheet (not measured here)",
    ),
]

DEFAULT_GPU = KNOWN_GPUS[0]  # the H200: what CPU runs tune for


class DeviceFacts(BaseModel):
    """The device a run tunes for, with where each number came from."""

    name: str
    arch: str | None = None
    sm_count: int
    shared_memory_per_block: int | None = None
    l2_bytes: int | None = None
    memory_bytes_per_s: float = Field(description="the memory roofline used for evidence")
    memory_spec_bytes_per_s: float | None = None
    peak_flops: dict[FlopKind, float] = Field(default_factory=dict)
    source: Literal["device", "defaults"]
    notes: list[str] = Field(default_factory=list)

    def flop_rate(self, dtype: str | None, *, tensor_cores: bool, allow_tf32: bool = False) -> float | None:
        """Peak FLOP/s for work in ``dtype``: on tensor cores (matmul-like work) or CUDA cores."""
        if dtype == "float64":
            return self.peak_flops.get("fp64")
        if tensor_cores and dtype in ("bfloat16", "float16"):
            return self.peak_flops.get("bf16_tensor" if dtype == "bfloat16" else "fp16_tensor")
        if tensor_cores and dtype == "float32" and allow_tf32:
            return self.peak_flops.get("tf32_tensor")
        fp32 = self.peak_flops.get("fp32")
        tf32 = self.peak_flops.get("tf32_tensor")
        if tensor_cores and dtype == "float32" and fp32 and tf32:
            # fp32-accurate matmul work also runs as 3xTF32 on tensor cores (three TF32 products a
            # product): its ceiling is the faster of the two (the H200's 3xTF32 GEMMs passed the fp32
            # CUDA-core peak, a "1.23 of the roofline" that measured nothing, 2026-12-04)
            return max(fp32, tf32 / 3)
        return fp32

    def line(self) -> str:
        """One line for prompts, reports and ``egg principles explain``."""
        parts = [f"{self.name} ({self.arch or 'arch unknown'}, {self.sm_count} SMs"]
        if self.l2_bytes:
            parts.append(f", {self.l2_bytes / 2**20:.0f} MiB L2")
        parts.append(f", {self.memory_bytes_per_s / 1e12:.2f} TB/s memory roofline")
        if "bf16_tensor" in self.peak_flops:
            parts.append(f", {self.peak_flops['bf16_tensor'] / 1e12:.0f} TFLOP/s bf16")
        parts.append(")")
        if self.source == "defaults":
            parts.append(" [defaults: no CUDA device here]")
        return "".join(parts)


def find_gpu(name: str, table: list[GpuSpec] | None = None) -> GpuSpec | None:
    """The first table row whose ``match`` is in ``name`` (case-insensitive), or None."""
    lowered = name.lower()
    return next((spec for spec in (table or KNOWN_GPUS) if spec.match.lower() in lowered), None)


def merge_tables(extra: list[GpuSpec], base: list[GpuSpec] | None = None) -> list[GpuSpec]:
    """``extra`` rows first (a pack's rows win), then the base rows they do not replace."""
    replaced = {spec.match.lower() for spec in extra}
    return [*extra, *(spec for spec in (base or KNOWN_GPUS) if spec.match.lower() not in replaced)]


def facts_from_spec(spec: GpuSpec, *, name: str | None = None, source: Literal["device", "defaults"] = "defaults",
                    notes: list[str] | None = None) -> DeviceFacts:
    return DeviceFacts(
        name=name or f"NVIDIA {spec.match}", arch=spec.arch, sm_count=spec.sm_count,
        shared_memory_per_block=spec.shared_memory_per_block, l2_bytes=spec.l2_bytes,
        memory_bytes_per_s=spec.memory_bytes_per_s, memory_spec_bytes_per_s=spec.memory_spec_bytes_per_s,
        peak_flops=dict(spec.peak_flops), source=source, notes=list(notes or []),
    )


def default_facts(table: list[GpuSpec] | None = None) -> DeviceFacts:
    """The H200 defaults (or the table's H200 row, if a pack replaced it), saying that they are."""
    spec = find_gpu(DEFAULT_GPU.match, table) or DEFAULT_GPU
    return facts_from_spec(spec, notes=[f"no CUDA device: the {spec.match} defaults stand in ({spec.source})"])


def _positive(props: Any, attribute: str) -> int | None:
    value = getattr(props, attribute, None)
    return int(value) if isinstance(value, (int, float)) and value > 0 else None


def facts_from_properties(props: Any, table: list[GpuSpec] | None = None) -> DeviceFacts:
    """Facts from a ``torch.cuda.get_device_properties`` object (any object with its attributes).

    The properties win where they exist; the table fills in the ceilings no property gives.
    Attributes older torch builds lack (``memory_bus_width``, ``L2_cache_size``) fall back to the
    table, and the notes say which.
    """
    name = str(getattr(props, "name", "unknown GPU"))
    spec = find_gpu(name, table)
    notes: list[str] = []
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    arch = f"sm_{major}{minor}" if isinstance(major, int) and isinstance(minor, int) else (spec.arch if spec else None)
    bus_bits, clock_khz = _positive(props, "memory_bus_width"), _positive(props, "memory_clock_rate")
    bus_bytes_per_s = bus_bits / 8 * clock_khz * 1e3 * 2 if bus_bits and clock_khz else None
    smem = _positive(props, "shared_memory_per_block_optin") or _positive(props, "shared_memory_per_block")
    l2 = _positive(props, "L2_cache_size")
    for value, what in ((smem, "shared memory per block"), (l2, "L2 size"), (bus_bytes_per_s, "bus bandwidth")):
        if value is None:
            notes.append(f"{what}: not reported by this torch build" + (", from the table" if spec else ""))
    if spec is not None:
        ceiling = spec.memory_bytes_per_s
        notes.append(f"ceilings of {spec.match}: {spec.source}")
    elif bus_bytes_per_s is not None:
        ceiling = bus_bytes_per_s
        notes.append(f"{name} is not in the device table: the memory roofline is the bus bandwidth "
                     "(bus width x memory clock x 2) and no peak FLOP rate is known; add a 'devices:' "
                     "entry to a principle pack to give them")
    else:
        ceiling = DEFAULT_GPU.memory_bytes_per_s
        notes.append(f"{name} is not in the device table and reports no bus bandwidth: the "
                     f"{DEFAULT_GPU.match} memory roofline stands in")
    return DeviceFacts(
        name=name,
        arch=arch,
        sm_count=_positive(props, "multi_processor_count") or (spec.sm_count if spec else DEFAULT_GPU.sm_count),
        shared_memory_per_block=smem or (spec.shared_memory_per_block if spec else None),
        l2_bytes=l2 or (spec.l2_bytes if spec else None),
        memory_bytes_per_s=ceiling,
        memory_spec_bytes_per_s=bus_bytes_per_s or (spec.memory_spec_bytes_per_s if spec else None),
        peak_flops=dict(spec.peak_flops) if spec else {},
        source="device",
        notes=notes,
    )


def device_facts(device: str = "auto", table: list[GpuSpec] | None = None, index: int = 0) -> DeviceFacts:
    """Facts of CUDA device ``index`` when there is one (``device`` ``auto`` or ``cuda``), else the
    H200 defaults. ``table``: the known-GPU table to use (:func:`principles.device_table` merges
    the packs' rows over :data:`KNOWN_GPUS`)."""
    if device != "cpu":
        import torch

        if torch.cuda.is_available():
            return facts_from_properties(torch.cuda.get_device_properties(index), table)
        if device == "cuda":
            log.warning("device.no_cuda", using=DEFAULT_GPU.match)
    return default_facts(table)
