"""Generated-kernel launches in the runner: counted, checked for side streams, and ablatable.

Every launch of a generated kernel passes one choke point, wrapped here before the candidate is
imported:

* Triton on a GPU: ``CompiledKernel.run`` (both ``kernel[grid](...)`` through
  ``JITFunction.run`` and a compiled handle's ``compiled[grid](...)`` end there); the wrapper sees
  the kernel's name and the CUDA stream it is launched on. A launch on a stream other than the
  caller's is recorded as an escape from the timer.
* Triton in the interpreter (CPU): ``GridExecutor.__call__``.
* CUDA extensions: :mod:`egg.evaluate.cuda_build` counts calls into the built module and consults
  the same ablation switch.

**Ablation.** With :attr:`LaunchLog.ablate` set, each launch still runs, but what it wrote is
replaced by poison afterwards (:mod:`egg.evaluate.ablation`): the launch's writes are gone, as if
the kernel had written garbage. One ablated forward call tells whether the generated kernels do
any of the work: if the output still matches the reference, they are decoration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

from egg.evaluate.ablation import run_ablated


class LaunchLog:
    """Launches seen since the last :meth:`reset`; installed once per runner process."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.side_stream: list[str] = []
        self.expected_stream: int | None = None
        self.ablate = False
        self.poisoned = 0  # launches whose writes were replaced by poison since the last reset
        self.ever: set[str] = set()  # every generated kernel name seen in this process
        self._installed = False

    def reset(self, expected_stream: int | None = None) -> None:
        self.names.clear()
        self.side_stream.clear()
        self.poisoned = 0
        self.expected_stream = expected_stream

    @property
    def total(self) -> int:
        return sum(self.names.values())

    def record(self, name: str, stream: Any = None) -> None:
        self.names[name] += 1
        self.ever.add(name)
        if self.expected_stream is not None and stream is not None:
            try:
                if int(stream) != self.expected_stream:
                    self.side_stream.append(name)
            except (TypeError, ValueError):
                pass

    def add_extension_calls(self, counts: dict[str, int]) -> None:
        for name, n in counts.items():
            if n:
                self.names[f"cuda_ext:{name}"] += n
                self.ever.add(f"cuda_ext:{name}")

    def run_ablated(self, launch: Callable[[], Any], fn: Any, arg_names: list[str], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """Run ``launch``, then replace what it wrote by poison (:mod:`egg.evaluate.ablation`)."""
        self.poisoned += 1
        return run_ablated(launch, fn, arg_names, args, kwargs)

    def install(self, interpreter: bool) -> None:
        if self._installed:
            return
        if interpreter:
            self._install_interpreter()
        else:
            self._install_gpu()
        self._installed = True

    def _install_interpreter(self) -> None:
        from triton.runtime import interpreter

        original = interpreter.GridExecutor.__call__
        log = self

        def launch(executor: Any, *args: Any, **kwargs: Any) -> Any:
            log.record(getattr(executor.fn, "__name__", "triton_kernel"))
            if log.ablate:
                # executor.fn is the interpreter's rewrite; the module holds the @jit original
                jit = getattr(executor.fn, "__globals__", {}).get(getattr(executor.fn, "__name__", ""), executor.fn)
                return log.run_ablated(lambda: original(executor, *args, **kwargs), jit,
                                       list(getattr(executor, "arg_names", [])), args, kwargs)
            return original(executor, *args, **kwargs)

        interpreter.GridExecutor.__call__ = launch  # type: ignore[method-assign]

    def _install_gpu(self) -> None:
        from triton.compiler.compiler import CompiledKernel

        launcher_of = CompiledKernel.run.fget  # type: ignore[attr-defined]
        log = self

        def run(kernel: Any) -> Callable[..., Any]:
            launcher = launcher_of(kernel)
            name = str(getattr(kernel, "name", "triton_kernel"))

            def launch(*args: Any, **kwargs: Any) -> Any:
                # launcher(grid_0, grid_1, grid_2, stream, function, metadata, launch_metadata,
                #          enter_hook, exit_hook, *kernel_args)
                log.record(name, args[3] if len(args) > 3 else None)
                if log.ablate:
                    jit = getattr(getattr(kernel, "src", None), "fn", None)
                    return log.run_ablated(lambda: launcher(*args, **kwargs), jit,
                                           list(getattr(jit, "arg_names", [])), args[9:], kwargs)
                return launcher(*args, **kwargs)

            return launch

        CompiledKernel.run = property(run)  # type: ignore[assignment, method-assign]


def expected_stream(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return int(torch.cuda.current_stream(device).cuda_stream)


RUNNER_LOG = LaunchLog()  # the runner's one log; cuda_build counts into it and reads its ablate switch
