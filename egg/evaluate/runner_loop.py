"""The runner's command loop: one judge command in, one reply out, until ``exit`` or EOF.

A :class:`~egg.evaluate.rejection.Rejected` becomes a ``failed`` reply (the judge ends the
evaluation there); a fatal CUDA error ends the process too, since its context can run nothing more.
"""

from __future__ import annotations

import os
from typing import Any

from egg.evaluate import wire
from egg.evaluate.messages import BufferSpec, Build, Call, Load, MapBuffers, Profile, Warmup
from egg.evaluate.rejection import Rejected, describe_exception, is_fatal_cuda


def _probe(raw: dict[str, Any]) -> None:
    """The judge's transport self-test: map one shared buffer, add one, hand it back."""
    from egg.evaluate.buffers import Mapped

    mapped = Mapped(BufferSpec.model_validate(raw["buffer"]))
    mapped.pull()
    mapped.tensor.add_(1)
    mapped.push()
    if mapped.tensor.is_cuda:
        import torch

        torch.cuda.synchronize()


def _dispatch(runner: Any, raw: dict[str, Any]) -> dict[str, Any]:
    op = raw.get("op")
    if op == "load":
        return {"op": "ok", "notes": runner.load(Load.model_validate(raw))}
    if op == "model":
        runner.build(Build.model_validate(raw))
    elif op == "buffers":
        runner.map_buffers(MapBuffers.model_validate(raw))
    elif op == "call":
        return runner.call(Call.model_validate(raw))
    elif op == "warmup":
        runner.warmup(Warmup.model_validate(raw))
    elif op == "profile":
        return runner.profile(Profile.model_validate(raw))
    elif op == "probe":
        _probe(raw)
    else:
        raise Rejected("crash", f"runner: unknown command {op!r}")
    return {"op": "ok"}


def loop(runner: Any, write_dirs: list[str]) -> int:
    sock = runner.sock
    try:
        runner.start(write_dirs)
    except Exception as exc:  # noqa: BLE001 - the judge reports it as a crash of the runner
        wire.send(sock, {"op": "failed", "stage": "crash", "reason": f"runner setup failed: {type(exc).__name__}: {exc}"})
        return 3
    wire.send(sock, {"op": "hello", "pid": os.getpid(), "isolation": runner.isolation})
    while True:
        try:
            raw = wire.recv(sock)
        except wire.WireError:
            return 0
        if raw.get("op") == "exit":
            return 0
        try:
            reply = _dispatch(runner, raw)
        except Rejected as rej:
            wire.send(sock, {"op": "failed", "stage": rej.stage, "reason": rej.reason[:4000],
                             "fatal_cuda": rej.stage == "crash"})
            if rej.stage == "crash":
                return 3
            continue
        except Exception as exc:  # noqa: BLE001 - whatever the candidate broke is still a verdict
            fatal = is_fatal_cuda(exc)
            reason = describe_exception(exc, getattr(runner, "candidate_path", "") or "candidate.py")
            wire.send(sock, {"op": "failed", "stage": "crash" if fatal else "correctness", "reason": reason[:4000],
                             "fatal_cuda": fatal})
            if fatal:
                return 3
            continue
        wire.send(sock, reply)
