"""``--executor local|ray``, ``--ray-address ADDR``, ``--workers N``: shared by optimize and kernelbench."""

from __future__ import annotations

import argparse

from egg.errors import EggInputError
from egg.executor import ExecutorSpec


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="where candidates are judged: this host's GPUs (local, default) or a Ray cluster "
                        "you started with 'ray start' (ray; pip install 'egg-kernels[ray]')")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --executor ray: the cluster's address, e.g. HEAD:6379 (default: RAY_ADDRESS, "
                        "else the cluster started on this machine)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="judges per GPU (default 2: one compiles while the other times), or CPU judges "
                        "on a machine without a GPU (default 1)")


def executor_spec_from(args: argparse.Namespace) -> ExecutorSpec:
    if args.workers is not None and args.workers < 1:
        raise EggInputError(f"--workers: expected a number >= 1, got {args.workers}")
    if args.ray_address is not None and args.executor != "ray":
        raise EggInputError("--ray-address needs --executor ray")
    return ExecutorSpec(kind=args.executor, ray_address=args.ray_address, workers=args.workers)
