"""The process that screens a tuner's configs: ``python -m agents.expert.screen_process SPEC OUT``.

It reads a :class:`~agents.expert.screen.ScreenSpec`, builds the reference and every config the
judge's way (:mod:`egg.profile.target`), checks each config's first call for gross errors, runs
:func:`~agents.expert.screen.halve` over those that pass, and writes a
:class:`~agents.expert.screen.ScreenReport` to OUT. Only expert-rendered code runs here (the
tuner's own re-renders of an expert parent), never an LLM's: this process has none of the
runner's sandbox, and needs none for code EGG generated itself.

The gross-error reference is the parent's output where the spec has a parent (the candidate being
tuned, which the judge accepted): configs of one kernel differ from it by their summation order
only, while their error against eager can be the precision the problem allows (a TF32 convolution
under PyTorch's default flags misses eager by up to 3e-3 on KernelBench level 2 #1, the judge's
TF32 allowance, which this screen does not recompute). The parent itself is not checked (the
judge did); without a parent, eager's output is the reference.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

import torch

from agents.expert.screen import GROSS_ERROR_SCALE, PARENT, STARTUP_GRACE_S, ScreenEntry, ScreenReport, ScreenSpec, halve
from egg.evaluate.correctness import clone_tree, compare_outputs
from egg.evaluate import device_lease
from egg.evaluate.gpu_lock import GpuLock
from egg.evaluate.rejection import is_out_of_memory
from egg.evaluate.timing import time_calls
from egg.problem import import_file, inspect_problem
from egg.profile.target import build_model, draw_inputs, load
from egg.tolerance import Tolerance, resolve_tolerances


BUILD_SHARE = 0.6  # of the screen's deadline, for building and checking configs
RETRY_MARGIN_S = 15.0  # of the caller's deadline, kept for the report and the process's exit
RETRY_MIN_S = 10.0  # a re-screen with less time than this (or than the spec's own) is not tried


def _loose(info_tolerance: Any) -> dict[str, Tolerance]:
    table = resolve_tolerances(info_tolerance)
    return {k: Tolerance(atol=t.atol * GROSS_ERROR_SCALE, rtol=t.rtol * GROSS_ERROR_SCALE) for k, t in table.items()}


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]


def run(spec: ScreenSpec, out: Path | None = None) -> ScreenReport:
    """Screen ``spec``'s configs. The screen holds a problem's inputs, reference output and configs
    in device memory, so it holds the device's lease too (shared): an evaluation that runs out of
    memory beside it is re-run alone instead of blamed on its candidate (egg/evaluate/device_lease.py).
    A screen that ran out of memory itself while another EGG process held the device (the H100
    sweep of 2026-12-05: three tuners' screens of a 6 GB level-1 problem beside its judges) screens
    again with the device to itself (the lease exclusive) if its caller's deadline leaves the time;
    the first screen's report is written to ``out`` before, so a caller that kills this process
    at its deadline still has it. A config that runs out of memory alone is reported as before."""
    device = torch.device(spec.device)
    started = time.monotonic()
    path = device_lease.lease_path(device)
    with device_lease.hold(path, alone=False) as held:
        report = _attempt(spec, device, spec.seconds)
    if not (_ran_out(report) and held.overlapped):
        return report
    report.notes.append("ran out of device memory while another EGG process held the device")
    if out is not None:
        out.write_text(report.model_dump_json())
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    with device_lease.hold(path, alone=True):
        left = spec.seconds + STARTUP_GRACE_S - RETRY_MARGIN_S - (time.monotonic() - started)
        if left < min(spec.seconds, RETRY_MIN_S):
            report.notes.append("no time left to screen again with the device to itself")
            return report
        again = _attempt(spec, device, min(spec.seconds, left))
    again.notes.append("screened again with the device to itself: the first screen ran out of device memory "
                       "while another EGG process held it")
    return again


def _ran_out(report: ScreenReport) -> bool:
    return is_out_of_memory(report.error or "") or any(
        e.status == "error" and is_out_of_memory(e.detail) for e in report.entries)


def _attempt(spec: ScreenSpec, device: torch.device, seconds: float) -> ScreenReport:
    """One screen; running out of device memory outside a config (the inputs, the reference) is
    reported in ``error``, as the caller reports a screen that died."""
    try:
        return _run(spec, device, seconds)
    except torch.OutOfMemoryError as exc:
        return ScreenReport(error=_describe(exc))


def _run(spec: ScreenSpec, device: torch.device, seconds: float) -> ScreenReport:
    started = time.monotonic()
    problem = load(spec.problem, spec.shape_set)
    tolerances = _loose(inspect_problem(spec.problem).tolerance)
    inputs = draw_inputs(problem, spec.seed + 1, device)
    entries = {key: ScreenEntry(key=key, status="not reached") for key in spec.candidates}
    models: dict[str, torch.nn.Module] = {}
    deadline = time.monotonic() + seconds
    # builds (Triton compiles, on CPUs the judges share) stop early enough to leave the timing rounds
    # time: on a busy H200 host 12 fp32 GEMM configs took the whole 40 s and none was timed (2026-12-03)
    build_deadline = time.monotonic() + seconds * BUILD_SHARE
    lock = GpuLock.for_device(device)
    with torch.no_grad():
        with lock.shared():  # GPU work that measures nothing: never beside another process's timing
            expected = build_model(problem.Model, problem, spec.seed, device)(*clone_tree(inputs))
        got = None
        order = sorted(spec.candidates, key=lambda k: k != PARENT)  # the parent first: the others' reference
        passed = 0
        for key in order:
            path = spec.candidates[key]
            if spec.quota is not None and passed >= spec.quota:
                break  # enough configs built and checked: the spares left are not needed
            # past the build share, stop; but build the parent and ``keep`` configs whatever the
            # clock says, so the timing rounds (halve's first-round floor) have something to time
            if time.monotonic() > build_deadline and len(models) > spec.keep:
                break
            try:  # the first call compiles the config's kernels and is checked, never timed
                model = build_model(import_file(path, "egg_screened").ModelNew, problem, spec.seed, device)
                with lock.shared():
                    got = model(*clone_tree(inputs))
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
            except Exception as exc:  # noqa: BLE001 - a config the template renders but cannot run: reported
                entries[key] = ScreenEntry(key=key, status="error", detail=_describe(exc))
                continue
            if key == PARENT:  # judged already: its output is what the other configs must agree with
                expected, got = got, None
            else:
                cmp = compare_outputs(expected, got, tolerances)
                if not cmp.ok:
                    entries[key] = ScreenEntry(key=key, status="gross error", detail=(cmp.reason or "")[:300])
                    continue
            entries[key] = ScreenEntry(key=key, status="ok")
            models[key] = model
            passed += key != PARENT
        del expected, got
        if spec.quota is not None:  # spares never built were not screened: not in the report
            spares = [k for k in order if k != PARENT][spec.quota:]
            entries = {k: e for k, e in entries.items() if k not in spares or e.status != "not reached"}

        def measure(key: str, calls: int) -> float | None:
            model = models[key]
            try:
                with lock.exclusive():
                    times = time_calls(lambda: model(*inputs), lambda: None, calls, 1, device)
            except Exception as exc:  # noqa: BLE001 - reported, the search goes on without it
                entries[key] = ScreenEntry(key=key, status="error", detail=_describe(exc))
                return None
            times.sort()
            return times[len(times) // 2]

        times, finalists, rounds = halve(list(models), measure, spec.keep, spec.reps, deadline)
        lock.close()
    for key, medians in times.items():
        entries[key].medians_ms = medians
    return ScreenReport(entries=list(entries.values()), finalists=finalists, rounds=rounds,
                        wall_s=time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.stderr.write("usage: python -m agents.expert.screen_process SPEC.json OUT.json\n")
        return 2
    spec = ScreenSpec.model_validate_json(Path(args[0]).read_text())
    out = Path(args[1])
    out.write_text(run(spec, out).model_dump_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
