"""Checks on the candidate's reported times that do not trust the candidate's process.

The runner measures its candidate with CUDA events, but a candidate runs in that process and can
make the events say anything. Two checks bound what the reported median can be:

**Physics floor.** No kernel moves data faster than the memory system's *spec* peak. The judge
counts bytes any correct candidate must move per call, from the reference's own tensors:

* outputs: each output tensor's dense size (its storage, if an expanded view is smaller; nothing
  for an output that aliases an input);
* inputs: the elements of the floating-point inputs whose gradient (of a random projection of the
  outputs) is nonzero, i.e. elements that provably influence the result
  (:func:`egg.evaluate.reference.input_bytes_read`);
* minus the L2 size: up to that much output can still sit in L2 when the end event is recorded.

Parameters are not counted (a candidate may legitimately hold a derived, smaller form computed at
construction), and neither are FLOPs: the reference's FLOP count is not a lower bound (a
``diag(d) @ x`` reference takes N^3 FLOPs where N^2 suffice). The floor is bytes / spec peak
bandwidth (the larger of the driver-reported HBM clock x bus width and a table of spec sheets),
so an honest kernel, which reaches at most ~90% of spec, never falls below it.

**The judge's clock.** The judge measures, for every timed call, the wall time from writing the
inputs to having its private snapshot of the output slots, and the same for a *null call* made
right before it (the same protocol: inputs, flush, events, slot copy, sync, no candidate; the
pair sees the same load on the machine). For an honest candidate, with ``E`` its event time and
``F`` the flush time::

    wall - null  <=  E + F + noise

GPU-bound, the host waits in the sync while the GPU runs the kernels, so the extra wall is ``E``.
Host-bound, the GPU idles between launches inside the event window, so ``E`` includes the host
time the judge's wall sees, except the host work done while the GPU is still busy with the flush
and the protocol's spin before the start event (:mod:`egg.evaluate.timing`): that work is hidden
from the events and from the wall alike, since the null call waits for the same flush and spin.
``2F`` is slack for the slot copies and the sync. Noise (a descheduled process, a busy machine)
only ever adds wall time, so the judge compares a low quantile of its per-call figures with the
*median* reported time: ``J = max(q25(wall - null) over the pairs, q25(wall) - q25(null))`` (the
pairs follow slow changes of load; the second term keeps noise in the null calls, which lowers the
pairs' differences, from hiding time), and rejects when
``J > median(E) * (1 + f) + 2F + margin``, with f = 25% and margin 0.1 ms on a
GPU (100% and 20 ms on the CPU, where the interpreter and a shared, loaded machine are noisy: there
the clock only catches gross lies). The spin adds nothing to the allowance, so a longer spin does
not let a candidate hide more. A candidate cannot
lower the judge's figures, so lying on only some calls does not help either: if enough calls lie
to move the reported median, the judge's quantile still sees the real time of most calls.

A disagreement is confirmed on up to two fresh sets of (at least 30) calls before the judge
rejects (:func:`egg.evaluate.judge_timing.time_candidate`): a loaded host comes and goes, a lie
stays. The null call does the timed call's host work after the end event on a stand-in output
(:meth:`egg.evaluate.runner.Runner.call`), so a loaded host, which stretches host work, does not
stretch only the timed side. Not handled: a process outside EGG's GPU lock keeping the same GPU
busy. On the H200 (2026-12-03, ``benchmarks/cotenant_probe.py``) an honest 0.05 ms kernel then
waited 0.6-0.7 ms longer per timed call than per null call beside a GEMM-running process, with the
spin on or off, and was rejected; where that wait falls is not known yet (README, "Known false
rejection"; the raw figures are in ``Verdict.clock_sets``).
"""

from __future__ import annotations

import statistics

import torch
from pydantic import BaseModel

# Spec-sheet HBM bandwidth, bytes/s, by a substring of the device name (the most specific first).
_SPEC_BANDWIDTH = (("H200", 4.8e12), ("GH200", 4.9e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12),
                   ("H100", 3.35e12), ("H800", 3.35e12), ("B200", 8.0e12), ("B100", 8.0e12), ("A100", 2.039e12),
                   ("MI300", 5.3e12), ("L40", 0.864e12), ("A10", 0.6e12))
# CPU runs: no honest interpreter comes near this, and a timer that reports ~0 is still caught.
CPU_PEAK_BYTES_PER_S = 2.0e12
GPU_MARGIN_MS, GPU_MARGIN_FRACTION = 0.1, 0.25
CPU_MARGIN_MS, CPU_MARGIN_FRACTION = 20.0, 1.0


class DevicePeak(BaseModel):
    bytes_per_s: float | None
    l2_bytes: int
    source: str


def device_peak(device: torch.device) -> DevicePeak:
    if device.type != "cuda":
        return DevicePeak(bytes_per_s=CPU_PEAK_BYTES_PER_S, l2_bytes=0, source="CPU bound (2 TB/s)")
    props = torch.cuda.get_device_properties(device)
    table = next((bw for key, bw in _SPEC_BANDWIDTH if key in props.name), None)
    derived = None
    try:
        from triton.runtime import driver

        info = driver.active.utils.get_device_properties(device.index or 0)
        derived = info["mem_clock_rate"] * 1e3 * 2 * info["mem_bus_width"] / 8
    except Exception:  # noqa: BLE001 - the table still applies
        pass
    peaks = [p for p in (table, derived) if p]
    if not peaks:
        return DevicePeak(bytes_per_s=None, l2_bytes=0, source=f"unknown peak bandwidth for {props.name}")
    peak = max(peaks)
    source = f"{props.name}: {peak / 1e12:.2f} TB/s spec" + (" (driver)" if peak == derived else " (spec sheet)")
    return DevicePeak(bytes_per_s=peak, l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0), source=source)


def floor_ms(bytes_needed: int, peak: DevicePeak) -> float | None:
    if not peak.bytes_per_s:
        return None
    return max(0, bytes_needed - peak.l2_bytes) / peak.bytes_per_s * 1e3


def floor_reason(median_ms: float, floor: float | None, bytes_needed: int, peak: DevicePeak) -> str | None:
    if floor is None or floor <= 0 or median_ms >= floor:
        return None
    return (f"reported time {median_ms:.4g} ms is below the physics floor {floor:.4g} ms: the outputs and the "
            f"inputs the result depends on are {bytes_needed / 1e6:.3g} MB, which take at least that long at "
            f"{peak.source} (minus {peak.l2_bytes / 1e6:.3g} MB of L2): impossible")


def clock_reason(event_ms: list[float], wall_ms: list[float], null_ms: list[float], flush: float,
                 on_gpu: bool) -> tuple[float, str | None]:
    """(the judge-clock figure, a rejection reason or None); ``flush`` in ms; see the module docstring."""
    beyond = sorted(w - n for w, n in zip(wall_ms, null_ms))
    # Noise in the null calls lowers the pairs' differences as surely as noise in the timed calls
    # raises them, so on a noisy host the pairs' quantile alone drifts below the truth; the
    # difference of the two series' own low quantiles does not (the noise shifts both alike).
    # The larger of the two is the judge's figure.
    judged = max(_q25(beyond), _q25(wall_ms) - _q25(null_ms))
    reported = statistics.median(event_ms)
    margin_ms, fraction = (GPU_MARGIN_MS, GPU_MARGIN_FRACTION) if on_gpu else (CPU_MARGIN_MS, CPU_MARGIN_FRACTION)
    allowed = reported * (1 + fraction) + 2 * flush + margin_ms
    if judged <= allowed:
        return judged, None
    return judged, (f"timings reported by the candidate's process disagree with the judge's clock: median "
                    f"{reported:.4g} ms per call reported, but most calls took over {judged:.4g} ms beyond a null "
                    f"call on the judge's clock (at most {allowed:.4g} ms is consistent)")


def _q25(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[round(0.25 * (len(ordered) - 1))]
