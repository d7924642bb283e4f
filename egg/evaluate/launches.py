"""Counting generated-kernel launches, so a plain-PyTorch candidate cannot pass as a kernel.

Triton on a GPU: a ``launch_enter_hook`` sees every compiled-kernel launch with its name and the
CUDA stream it was launched on; a launch on a stream other than the caller's is recorded as an
escape from the timer (work on a side stream makes CUDA events on the caller's stream stop early).
Triton in the interpreter (CPU): ``GridExecutor.__call__`` is the one place a grid launch runs.
CUDA extensions: :func:`egg.evaluate.cuda_build.intercept_load_inline` counts calls into the built
module; the worker adds those counts through :meth:`LaunchLog.add_extension_calls`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class LaunchLog:
    """Launches seen since the last :meth:`reset`; installed once per worker process."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.side_stream: list[str] = []
        self.expected_stream: int | None = None
        self._installed = False

    def reset(self, expected_stream: int | None = None) -> None:
        self.names.clear()
        self.side_stream.clear()
        self.expected_stream = expected_stream

    @property
    def total(self) -> int:
        return sum(self.names.values())

    def add_extension_calls(self, counts: dict[str, int]) -> None:
        for name, n in counts.items():
            if n:
                self.names[f"cuda_ext:{name}"] += n

    def install(self, interpreter: bool) -> None:
        if self._installed:
            return
        if interpreter:
            self._install_interpreter()
        else:
            self._install_gpu_hook()
        self._installed = True

    def _install_interpreter(self) -> None:
        from triton.runtime import interpreter

        original = interpreter.GridExecutor.__call__
        log = self

        def counted_call(executor: Any, *args: Any, **kwargs: Any) -> Any:
            log.names[getattr(executor.fn, "__name__", "triton_kernel")] += 1
            return original(executor, *args, **kwargs)

        interpreter.GridExecutor.__call__ = counted_call  # type: ignore[method-assign]

    def _install_gpu_hook(self) -> None:
        from triton import knobs

        log = self

        def on_launch(metadata: Any) -> None:
            data = getattr(metadata, "data", None) or {}
            name = str(data.get("name", "triton_kernel"))
            log.names[name] += 1
            stream = data.get("stream")
            if log.expected_stream is not None and stream is not None and int(stream) != log.expected_stream:
                log.side_stream.append(name)

        knobs.runtime.launch_enter_hook.add(on_launch)
