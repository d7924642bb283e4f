"""``--profile auto|roofline``: the profiler evidence for stage winners; shared by optimize and kernelbench."""

from __future__ import annotations

import argparse


def add_profile_option(p: argparse.ArgumentParser) -> None:
    # ncu replays each stage winner's kernels under the GPU's exclusive lock (16-22 s a winner on the
    # H200, 2026-12-01); a suite that only wants the timings can use the roofline estimate alone.
    p.add_argument("--profile", default="auto", choices=["auto", "roofline"],
                   help="profiler evidence for the stage winners on a GPU: ncu where it works (auto) or the "
                        "roofline estimate only")
