"""Profiling an accepted candidate: ncu over a separate process where it works, the roofline otherwise.

:func:`profile_candidate` always computes the roofline evidence (from the analysis and the
verdict's time). With ``use_ncu`` and an ``ncu`` on the PATH it then runs
``ncu ... python -m egg.profile.target PROBLEM CANDIDATE`` in a process of its own (never inside
the judge's verdict path), parses the CSV, and returns the ncu evidence with the roofline line
kept in its notes. If ncu is missing, lacks permission to the counters, times out or prints no
table, the roofline evidence is returned with a note saying why: the report then says which path
was used (``Evidence.source``). The CSV and ncu's log stay in ``out_dir``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import structlog

from egg.device import DeviceFacts
from egg.profile.evidence import Evidence, roofline_evidence
from egg.profile.ncu import METRICS, NcuFailed, ncu_evidence, parse_ncu_csv
from egg.profile.target import NVTX_RANGE

log = structlog.get_logger(__name__)

NCU_TIMEOUT_S = 300.0


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/ncu")
    return str(default) if default.is_file() else None


def ncu_command(ncu: str, problem: Path, candidate: Path, csv_path: Path, *, shape_set: str, seed: int) -> list[str]:
    """The profiling command: one forward call of the candidate, its kernels only (NVTX filter)."""
    return [
        ncu, "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(csv_path),
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", "--target-processes", "all",
        "--metrics", ",".join(METRICS),
        sys.executable, "-m", "egg.profile.target", str(problem), str(candidate),
        "--shape-set", shape_set, "--seed", str(seed),
    ]


def run_ncu(problem: Path, candidate: Path, out_dir: Path, *, shape_set: str = "default", seed: int = 0,
            ncu: str | None = None, timeout_s: float = NCU_TIMEOUT_S) -> Evidence:
    """ncu evidence for one candidate; NcuFailed with a one-line reason when there is none."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise NcuFailed("ncu not found (not on the PATH, no /usr/local/cuda/bin/ncu)")
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, log_path = out_dir / "ncu.csv", out_dir / "ncu.log"
    command = ncu_command(ncu, problem.resolve(), candidate.resolve(), csv_path, shape_set=shape_set, seed=seed)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise NcuFailed(f"ncu took longer than {timeout_s:g} s") from None
    except OSError as exc:
        raise NcuFailed(f"cannot run ncu: {exc}") from None
    log_path.write_text(f"$ {' '.join(command)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}\n")
    text = csv_path.read_text(encoding="utf-8", errors="replace") if csv_path.is_file() else done.stdout
    try:
        kernels = parse_ncu_csv(text)
    except NcuFailed as exc:
        if done.returncode != 0 and not str(exc).startswith("==ERROR=="):  # ncu's own error line says most
            tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise NcuFailed(f"ncu failed: {tail[:300]}") from None
        raise
    return ncu_evidence(kernels)


def profile_candidate(
    problem: Path,
    candidate: Path,
    *,
    analysis: dict[str, Any],
    candidate_ms: float,
    device: DeviceFacts,
    out_dir: Path,
    shape_set: str = "default",
    seed: int = 0,
    use_ncu: bool = True,
    allow_tf32: bool = False,
    cudnn_tf32: bool = True,
    ncu: str | None = None,
    timeout_s: float = NCU_TIMEOUT_S,
) -> Evidence:
    """The best evidence available for an accepted GPU candidate (see the module docstring)."""
    roofline = roofline_evidence(analysis, candidate_ms, device, allow_tf32=allow_tf32, cudnn_tf32=cudnn_tf32)
    if not use_ncu:
        roofline.notes.append("ncu not requested (--profile roofline): roofline evidence only")
        return roofline
    try:
        evidence = run_ncu(problem, candidate, out_dir, shape_set=shape_set, seed=seed, ncu=ncu, timeout_s=timeout_s)
    except NcuFailed as exc:
        log.warning("profile.ncu_unavailable", candidate=str(candidate), reason=str(exc))
        roofline.notes.append(f"ncu evidence unavailable, roofline only: {exc}")
        return roofline
    evidence.notes.append(f"roofline: {roofline.statement}")
    evidence.achieved_flops_per_s = roofline.achieved_flops_per_s
    return evidence
