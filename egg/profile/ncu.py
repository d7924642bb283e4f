"""Nsight Compute's ``--csv`` output, parsed into evidence and a one-line bottleneck statement.

``ncu --csv`` prints one of two layouts, both handled here:

* ``--page details`` (the default): one row per (kernel launch, metric), with the columns
  ``"ID","Process ID","Process Name","Host Name","Kernel Name",...,"Section Name","Metric Name",
  "Metric Unit","Metric Value"`` (the columns between vary with the ncu version);
* ``--page raw``: one row per kernel launch with one column per metric, the second row giving
  each metric's unit.

Lines ncu or the program print around the table (``==PROF==``, ``==WARNING==``) are skipped;
``==ERROR==`` lines with no table (no permission to the performance counters, no GPU) raise
:class:`NcuFailed` with ncu's own words. Numbers may carry thousands separators; units are
scaled to nanoseconds and bytes (``--print-units base`` avoids the scaling altogether).
"""

from __future__ import annotations

import csv
import io
import re

from pydantic import BaseModel, Field

from egg.profile.evidence import LOW_FRACTION, Bound, Evidence, Stall

DURATION = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
L2_HIT_PCT = "lts__t_sector_hit_rate.pct"
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
# Not stalls: a warp that was selected issued; one not selected was ready but another was picked.
_NOT_STALLS = {"selected", "not_selected"}
# What the profiling run asks ncu for (the stall reasons by a regular expression: every reason the
# GPU's ncu knows). The same list is in egg/profile/README text of the run command.
METRICS = [DURATION, DRAM_PCT, SM_PCT, OCCUPANCY_PCT, L2_HIT_PCT, *DRAM_BYTES,
           r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"]

_SCALE = {
    "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "KB": 1e3, "MB": 1e6, "GB": 1e9,
}


# Columns that describe the launch, not a metric.
_LAUNCH_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name", "Kernel Time",
                   "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name"}


class NcuFailed(RuntimeError):
    """ncu ran but produced no metrics table; the message is ncu's own error line."""


class KernelMetrics(BaseModel):
    id: str
    name: str
    metrics: dict[str, float] = Field(default_factory=dict)  # in ns, bytes, % or ncu's unit

    @property
    def duration_ns(self) -> float:
        return self.metrics.get(DURATION, 0.0)


def _number(text: str, unit: str) -> float | None:
    cleaned = text.strip().replace(",", "")
    if not cleaned or cleaned.lower() in ("n/a", "nan", "-"):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    # "Gbyte/second" scales like "Gbyte"; "%", "cycle" and ratios keep their value
    return value * _SCALE.get(unit.removesuffix("/second"), 1.0)


def _table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        errors = [line.strip() for line in lines if line.startswith("==ERROR==")]
        raise NcuFailed(errors[0] if errors else "ncu printed no metrics table (no kernel was profiled: check the "
                        "NVTX range filter and that the candidate launches kernels)")
    body = [line for line in lines[start:] if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(body))))


def parse_ncu_csv(text: str) -> list[KernelMetrics]:
    """Kernel launches in the order ncu profiled them, with their metrics."""
    rows = _table(text)
    header, data = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    name_col = col.get("Kernel Name", col.get("Function Name"))
    if name_col is None:
        raise NcuFailed("ncu's table has no 'Kernel Name' column")
    kernels: dict[str, KernelMetrics] = {}
    if "Metric Name" in col:  # --page details: one row per metric
        for row in data:
            if len(row) != len(header):
                continue
            kid = row[col["ID"]]
            kernel = kernels.setdefault(kid, KernelMetrics(id=kid, name=row[name_col]))
            value = _number(row[col["Metric Value"]], row[col["Metric Unit"]] if "Metric Unit" in col else "")
            if value is not None:
                kernel.metrics[row[col["Metric Name"]]] = value
        return list(kernels.values())
    has_units = bool(data) and not data[0][col["ID"]].strip()  # --page raw: the second row holds units
    units = data[0] if has_units else [""] * len(header)
    for row in data[1:] if has_units else data:
        if len(row) != len(header) or not row[col["ID"]].strip():
            continue
        kernel = KernelMetrics(id=row[col["ID"]], name=row[name_col])
        for i, metric in enumerate(header):
            value = None if metric in _LAUNCH_COLUMNS else _number(row[i], units[i])
            if value is not None:
                kernel.metrics[metric] = value
        kernels[kernel.id] = kernel
    return list(kernels.values())


def _weighted(kernels: list[KernelMetrics], metric: str) -> float | None:
    """Duration-weighted mean of a metric over the launches that report it."""
    have = [(k.metrics[metric], k.duration_ns or 1.0) for k in kernels if metric in k.metrics]
    total = sum(w for _, w in have)
    return sum(v * w for v, w in have) / total if have and total else None


def _stalls(kernels: list[KernelMetrics]) -> list[Stall]:
    sums: dict[str, float] = {}
    for kernel in kernels:
        for metric, value in kernel.metrics.items():
            match = STALL.match(metric)
            if match and match.group(1) not in _NOT_STALLS:
                sums[match.group(1)] = sums.get(match.group(1), 0.0) + value * (kernel.duration_ns or 1.0)
    total = sum(sums.values())
    if total <= 0:
        return []
    return sorted((Stall(reason=r, share=v / total) for r, v in sums.items() if v > 0), key=lambda s: -s.share)


def ncu_evidence(kernels: list[KernelMetrics]) -> Evidence:
    """The bottleneck of a candidate's launches (one forward call), duration-weighted."""
    if not kernels:
        raise NcuFailed("ncu profiled no kernel")
    dram, sm = _weighted(kernels, DRAM_PCT), _weighted(kernels, SM_PCT)
    occupancy, l2 = _weighted(kernels, OCCUPANCY_PCT), _weighted(kernels, L2_HIT_PCT)
    stalls = _stalls(kernels)
    total_ns = sum(k.duration_ns for k in kernels)
    dram_f, sm_f = (dram or 0.0) / 100, (sm or 0.0) / 100
    if max(dram_f, sm_f) < LOW_FRACTION:
        bound: Bound = "latency"
        head = f"latency-bound: {dram_f:.2f} of DRAM peak, {sm_f:.2f} of SM peak"
    elif dram_f >= sm_f:
        bound, head = "memory", f"memory-bound at {dram_f:.2f} of DRAM peak"
    else:
        bound, head = "compute", f"compute-bound at {sm_f:.2f} of SM peak"
    parts = [head]
    if occupancy is not None:
        parts.append(f"occupancy {occupancy:.0f}%")
    if l2 is not None:
        parts.append(f"L2 hit {l2:.0f}%")
    if stalls:
        parts.append(f"top stall: {stalls[0].reason.replace('_', ' ')} ({stalls[0].share:.0%} of stalls)")
    if len(kernels) > 1 and total_ns > 0:
        longest = max(kernels, key=lambda k: k.duration_ns)
        parts.append(f"{len(kernels)} kernels, the longest ({_short(longest.name)}) {longest.duration_ns / total_ns:.0%} "
                     "of the time")
    dram_bytes = sum(k.metrics.get(m, 0.0) for k in kernels for m in DRAM_BYTES)
    return Evidence(
        source="ncu", bound=bound, statement="; ".join(parts) + " (ncu)",
        candidate_ms=total_ns / 1e6 if total_ns else None,
        achieved_bytes_per_s=dram_bytes / (total_ns / 1e9) if dram_bytes and total_ns else None,
        bandwidth_fraction=dram_f if dram is not None else None, flops_fraction=sm_f if sm is not None else None,
        occupancy=occupancy / 100 if occupancy is not None else None, l2_hit_rate=l2 / 100 if l2 is not None else None,
        stalls=stalls, kernels=len(kernels),
        notes=["ncu: kernel replay of one forward call; times are ncu's, not the harness's"],
    )


def _short(name: str) -> str:
    """A kernel name without its template arguments or parameter list."""
    return re.split(r"[<(]", name, maxsplit=1)[0].strip() or name
