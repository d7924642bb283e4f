"""The isolated worker process: one per device, recycled after a crash, a timeout or a CUDA error.

The parent (:mod:`egg.evaluate.pool`) starts this as ``python -m egg.evaluate.worker FD DEVICE``
in a new session (so a timeout kills any process a candidate starts, too), with a socket on FD.
A fresh interpreter rather than ``multiprocessing``'s spawn: spawn re-imports the caller's
``__main__``, which re-runs an unguarded user script. The worker has ``TRITON_INTERPRET=1`` in
its environment on CPU before anything can decorate a kernel, imports the timing module
(capturing timers before any candidate loads), then serves jobs over the socket. During a job its
stdout/stderr go to the job's log file in the archive.
"""

from __future__ import annotations

import gc
import os
import sys
from multiprocessing.connection import Connection
from typing import Any


def _redirect_output(log_path: str) -> tuple[int, int]:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return saved


def _restore_output(saved: tuple[int, int]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.close(saved[0])
    os.close(saved[1])


def worker_main(conn: Connection, device: str) -> None:
    """Serve jobs on ``conn`` for ``device`` until told to stop or the parent goes away."""
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    # Imported here, after the environment is set, and before any candidate: see module docstring.
    import torch

    from egg.evaluate import timing  # noqa: F401  (captures the timers)
    from egg.evaluate.job import Job, run_job
    from egg.evaluate.launches import LaunchLog

    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
        torch.cuda.init()
    from egg.evaluate import cuda_build

    cuda_build.build_listeners.append(lambda event, data: conn.send({"build": event, **data}))
    launches = LaunchLog()
    launches.install(interpreter=device == "cpu")
    conn.send({"ready": True, "pid": os.getpid(), "torch": torch.__version__})
    while True:
        try:
            message: Any = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        job = Job.model_validate(message["job"])
        saved = _redirect_output(message["log_path"])
        try:
            result = run_job(job, launches)
        finally:
            _restore_output(saved)
        if result.fatal_cuda:
            conn.send({"result": result.model_dump(mode="json")})
            # A sticky CUDA error poisons the context: this process can run nothing more.
            os._exit(3)
        _release_memory(torch)
        conn.send({"result": result.model_dump(mode="json")})


def _release_memory(torch: Any) -> None:
    """Hand cached device memory back between jobs.

    Memory poisoning allocates blocks of every freed size, so the caching allocator's segments
    grow with each job of a different shape; a worker shared by a whole suite would otherwise run
    out of device memory after a few large problems (seen on the H200: 138 GiB reserved).
    """
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    worker_main(Connection(int(sys.argv[1])), sys.argv[2])
