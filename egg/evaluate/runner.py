"""The runner: the only process that imports a candidate, fresh for every candidate.

It is forked from the zygote (:mod:`egg.evaluate.zygote`), which imported torch, triton and this
module but never initialised CUDA. The child then, in this order: redirects its output to the
archive's ``worker.log``, initialises its device, narrows what it may write (:mod:`sandbox`),
sets the evaluation's backend flags, captures the timers and the launch choke points
(:mod:`timing`, :mod:`launches`), installs the audit hook, imports the candidate and builds
``ModelNew`` after the seed. From then on it only obeys the judge (:mod:`egg.evaluate.messages`):
"call with the inputs now in the buffers, put the outputs in the slots, report your event times".

Everything here is untrusted once the candidate is imported: the candidate runs in this process
and can change any of it. That is why nothing the runner reports is a verdict; the judge reads
the outputs from its own buffers and checks the times against physics and its own clock.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from egg.evaluate import timing, wire
from egg.evaluate.buffers import Mapped, build_tree, describe, tensor_leaves
from egg.evaluate.cuda_build import CudaUnavailable, build_listeners, intercept_load_inline
from egg.evaluate.launches import RUNNER_LOG, expected_stream
from egg.evaluate.messages import Build, Call, Load, MapBuffers, Node, Profile, Warmup
from egg.evaluate.poison import poison_freed_memory
from egg.evaluate.problem_source import exec_problem
from egg.evaluate.rejection import Rejected, describe_exception, is_build_error, is_fatal_cuda
from egg.evaluate.sandbox import forbid_new_sessions, install_audit_hook, restrict_writes
from egg.live import bind_parameters

_counter = itertools.count()
_LIBRARY_KERNEL = ("at::", "cublas", "cutlass", "cudnn", "nvjet", "gemm", "sm90_", "sm80_", "xmma", "cub::",
                   "thrust::", "Memcpy", "Memset", "flash", "ampere_", "hopper_", "void cask")


class Runner:
    def __init__(self, sock: socket.socket, device: str) -> None:
        self.sock = sock
        self.device = torch.device(device)
        self.isolation: list[str] = []
        self.denials: list[str] = []
        self.identity: dict[str, Any] = {}
        self.candidate_path = ""
        self.model: Any = None
        self.model_cls: Any = None
        self.ext_calls: Any = None
        self.mapped: dict[int, Mapped] = {}
        self.slots: Node | None = None
        self.flush = None
        self.null_out: Any = None
        self.freed: list[int] = []
        self.wrappers: dict[str, Any] = {}
        self.written: dict[str, dict[str, Any]] = {}  # module -> its constants as written (shape_constants)

    # -- setup -------------------------------------------------------------------------------
    def start(self, write_dirs: list[str]) -> None:
        torch.set_grad_enabled(False)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
            torch.cuda.init()
            self.flush = timing.flush_buffer(self.device)
        if os.environ.get("EGG_RUNNER_LANDLOCK", "1") != "0":
            self.isolation.append(restrict_writes(write_dirs))
        else:
            self.isolation.append("landlock: turned off (EGG_RUNNER_LANDLOCK=0)")
        self.isolation.append(forbid_new_sessions())
        RUNNER_LOG.install(interpreter=self.device.type == "cpu")
        self.wrappers = _launch_wrappers()

    def load(self, m: Load) -> list[str]:
        torch.backends.cuda.matmul.allow_tf32 = m.flags.matmul_allow_tf32
        torch.backends.cudnn.allow_tf32 = m.flags.cudnn_allow_tf32
        self.identity = timing.timer_identity()
        self.candidate_path = m.candidate_path
        module_name = f"egg_candidate_{Path(m.candidate_path).stem}_{next(_counter)}".replace("-", "_").replace(".", "_")
        install_audit_hook(m.candidate_path, module_name, self.denials)
        build_listeners.append(lambda event, data: wire.send(self.sock, {"op": "build", "event": event}))
        try:
            with intercept_load_inline(Path(m.build_dir), on_gpu=self.device.type == "cuda") as calls:
                module = _import_candidate(m.candidate_path, module_name)
            self.ext_calls = calls
        except CudaUnavailable as exc:
            raise Rejected("compile" if not exc.check.ok else "correctness", exc.reason()) from None
        except SyntaxError as exc:
            raise Rejected("load", describe_exception(exc, m.candidate_path)) from None
        except Exception as exc:  # noqa: BLE001 - any import-time failure is the candidate's
            self.check_tamper()  # a refused audit event is the reason, not the exception it caused
            stage = "crash" if is_fatal_cuda(exc) else "compile" if is_build_error(exc) else "load"
            raise Rejected(stage, describe_exception(exc, m.candidate_path)) from None
        cls = getattr(module, "ModelNew", None)
        if cls is None or not isinstance(cls, type):
            raise Rejected("load", f"{Path(m.candidate_path).name} defines no class ModelNew")
        self.model_cls = cls
        self.problem = (m.problem_source, m.problem_name)
        self.check_tamper()
        return ["audit hook: the candidate may not open sockets, start processes, send signals, use ctypes, "
                "scan gc, trace, read frames or rewrite other modules' function code"]

    def build(self, m: Build) -> None:
        source, name = self.problem
        problem = exec_problem(source, f"<problem {name}>", name, m.overrides)
        self.shape_constants(m.overrides)
        torch.manual_seed(m.seed)
        init_inputs = problem.get_init_inputs()
        torch.manual_seed(m.seed)
        try:
            model = self.model_cls(*init_inputs).to(self.device)
        except Exception as exc:  # noqa: BLE001
            raise Rejected("load", "ModelNew(*get_init_inputs()) failed: "
                           + describe_exception(exc, self.candidate_path)) from None
        if getattr(problem, "BIND_PARAMETERS", False):
            # Live-module problems: the reference holds the user's trained weights, which no seed
            # reproduces; the candidate computes with the reference's parameter objects instead.
            torch.manual_seed(m.seed)
            reference = problem.Model(*init_inputs).to(self.device)
            unbound = bind_parameters(model, reference)
            if unbound:
                raise Rejected("load", f"ModelNew parameters {', '.join(unbound[:5])} match no parameter of the "
                               "reference by name and shape (this problem binds the reference's weights into ModelNew)")
        self.model = model
        self.check_tamper()

    def shape_constants(self, overrides: dict[str, Any]) -> None:
        """The shape set's constants in the candidate's own modules too: the modules defining
        ``ModelNew`` and its bases (a candidate that embeds the problem, as the expert's do, or copies
        its ``Model``). A ``Model.__init__`` reading a module constant (``nn.Linear(HIDDEN, HIDDEN)``)
        otherwise built the reference at the shape set's size and ``ModelNew`` at the written one, and
        every candidate failed every set but ``default``. A constant the set does not override takes
        its written value again (the sets run one after the other in one process). Installed
        packages' modules (a ``transformers`` base class) are never written."""
        for cls in self.model_cls.__mro__:
            module = sys.modules.get(cls.__module__)
            where = str(getattr(module, "__file__", None) or "")
            if module is None or cls.__module__ == "builtins" or "-packages" in where \
                    or cls.__module__.split(".")[0] in ("torch", "triton"):
                continue
            written = self.written.setdefault(module.__name__, {})
            for key in [k for k in overrides if k not in written and k in vars(module)]:
                written[key] = vars(module)[key]
            for key, value in written.items():
                setattr(module, key, overrides.get(key, value))

    def map_buffers(self, m: MapBuffers) -> None:
        self.mapped = {spec.id: Mapped(spec) for spec in m.buffers}
        self.slots = m.outputs
        # The null call's stand-in output: the slots themselves, with the reference's output structure
        # (see call(); a stand-in of its own was one more whole output held in this process).
        self.null_out = build_tree(m.outputs, self.mapped)

    # -- calls -------------------------------------------------------------------------------
    def inputs(self, node: Node) -> list[Any]:
        for leaf in tensor_leaves(node):
            self.mapped[int(leaf.buf or 0)].pull()
        tree = build_tree(node, self.mapped)
        return list(tree) if isinstance(tree, (tuple, list)) else [tree]

    def forward(self, inputs: list[Any], sync: bool = True) -> Any:
        """One call of the candidate. ``sync`` waits for its GPU work, so an asynchronous error is
        the call's; a timed call does not (its end event is synchronised outside the events)."""
        RUNNER_LOG.reset(expected_stream(self.device))
        before = _ext_counts(self.ext_calls)
        try:
            out = self.model(*inputs)
            if sync and self.device.type == "cuda":
                timing._cuda_synchronize()
        except Exception as exc:  # noqa: BLE001
            if is_fatal_cuda(exc):
                raise Rejected("crash", describe_exception(exc, self.candidate_path)) from None
            self.check_tamper()
            raise Rejected("correctness", "forward raised " + describe_exception(exc, self.candidate_path)) from None
        after = _ext_counts(self.ext_calls)
        RUNNER_LOG.add_extension_calls({k: after.get(k, 0) - before.get(k, 0) for k in after})
        return out

    def call(self, m: Call) -> dict[str, Any]:
        inputs = self.inputs(m.inputs)
        event_ms = None
        if m.mode == "null":
            # No candidate, but the same host work as a timed call after its end event: the
            # stand-in output is described, checked for aliases and copied into the slots, and the
            # reply has the timed call's shape. The judge's clock holds wall - null against the
            # event time; host work only the timed call did would be stretched on a loaded host
            # past the clock's slack, and an honest candidate rejected.
            _, event_ms = timing.timed_call(lambda: None, self.device, self.flush)
            return self.finish(inputs, self.null_out, event_ms, null=True)
        if m.mode in ("trial", "ablate"):
            poison_freed_memory(self.freed, self.device)
        RUNNER_LOG.ablate = m.mode == "ablate"
        try:
            if m.mode == "timed":
                out, event_ms = timing.timed_call(lambda: self.forward(inputs, sync=False), self.device, self.flush)
            else:
                out = self.forward(inputs)
        finally:
            RUNNER_LOG.ablate = False
        return self.finish(inputs, out, event_ms)

    def finish(self, inputs: list[Any], out: Any, event_ms: float | None, null: bool = False) -> dict[str, Any]:
        """Copy the outputs into the judge's slots (outside the timed region) and report. The null
        call's "output" is the slots: their bytes move as many times as a timed call's copy moves them."""
        reply: dict[str, Any] = {"op": "done", "event_ms": event_ms, "launches": dict(RUNNER_LOG.names),
                                 "side_stream": RUNNER_LOG.side_stream[:16], "poisoned": RUNNER_LOG.poisoned}
        if out is not None or self.model is not None:
            shape = describe(out)
            reply["output"] = shape.model_dump(exclude_none=True)
            reply["aliases"] = _aliases(out, inputs)
            self.freed = _churn_slots(self.slots, self.mapped) if null else _copy_to_slots(out, self.slots, self.mapped)
        for m in self.mapped.values():
            m.push()
        if self.device.type == "cuda":
            timing._cuda_synchronize()
        self.check_tamper()
        return reply

    def warmup(self, m: Warmup) -> None:
        inputs = self.inputs(m.inputs)
        timing.warm_up(lambda: self.forward(inputs), m.calls, self.device)
        self.check_tamper()

    def profile(self, m: Profile) -> dict[str, Any]:
        """GPU time per call in generated vs library kernels, from the profiler's device events."""
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        inputs = self.inputs(m.inputs)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(m.calls):
                self.forward(inputs)
        kernels: dict[str, float] = {}
        for evt in prof.events():
            if getattr(evt, "device_type", None) == DeviceType.CUDA:
                kernels[evt.name[:300]] = kernels.get(evt.name[:300], 0.0) + evt.time_range.elapsed_us() / 1e3 / m.calls
        uses_ext = bool(_ext_counts(self.ext_calls))
        generated = sum(ms for name, ms in kernels.items() if _generated(name, uses_ext))
        library = sum(kernels.values()) - generated
        top = dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:32])
        return {"op": "profile", "generated_ms": generated, "library_ms": library, "kernels": top}

    def check_tamper(self) -> None:
        changed = timing.changed_identities(self.identity, timing.timer_identity()) if self.identity else []
        changed += [k for k, v in _launch_wrappers().items() if self.wrappers.get(k) is not v]
        if changed:
            raise Rejected("static", f"candidate replaced {', '.join(changed)} at run time (timer/precision tampering)")
        if self.denials:
            raise Rejected("static", self.denials[0])


def _generated(kernel: str, uses_ext: bool) -> bool:
    """A Triton kernel this process launched, or (with a CUDA extension) a kernel that is not a
    library's: extension kernels carry their own names, library ones ATen/cuBLAS/CUTLASS names."""
    if kernel in RUNNER_LOG.ever:
        return True
    return uses_ext and not any(p in kernel for p in _LIBRARY_KERNEL)


def _launch_wrappers() -> dict[str, Any]:
    try:
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover
        return {}
    return {"triton CompiledKernel.run": CompiledKernel.__dict__.get("run"),
            "triton GridExecutor.__call__": interpreter.GridExecutor.__dict__.get("__call__")}


def _import_candidate(path: str, module_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # @triton.jit and dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def _ext_counts(calls: Any) -> dict[str, int]:
    counter = getattr(calls, "launch_counts", None)
    return dict(counter()) if callable(counter) else {}


def _ranges(tree: Any) -> list[tuple[int, int] | None]:
    from egg.evaluate.correctness import tensors_of

    out = []
    for t in tensors_of(tree):
        try:
            storage = t.untyped_storage()
            out.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()) if storage.nbytes() else None)
        except (RuntimeError, NotImplementedError):
            out.append(None)
    return out


def _aliases(out: Any, inputs: list[Any]) -> list[tuple[int, int]]:
    """(output leaf, input leaf) pairs whose storages overlap (defence in depth: the judge also
    compares every output it reads with the reference's own aliasing)."""
    pairs = []
    for i, o in enumerate(_ranges(out)):
        for j, x in enumerate(_ranges(inputs)):
            if o and x and o[0] < x[1] and x[0] < o[1]:
                pairs.append((i, j))
    return pairs[:256]


def _copy_to_slots(out: Any, slots: Node | None, mapped: dict[int, Mapped]) -> list[int]:
    """Copy each output tensor whose place, type, shape and dtype match the reference's slot."""
    if slots is None:
        return []
    freed: list[int] = []

    def visit(value: Any, slot: Node) -> None:
        if slot.kind == "tensor":
            if type(value) is torch.Tensor and isinstance(value, torch.Tensor):
                target = mapped[int(slot.buf or 0)].tensor
                if tuple(value.shape) == tuple(target.shape) and value.dtype == target.dtype:
                    target.copy_(value)
                    freed.append(value.untyped_storage().nbytes())
            return
        items = list(value.values()) if isinstance(value, dict) else value
        if slot.kind in ("seq", "dict") and isinstance(items, (tuple, list)) and len(items) == len(slot.items or []):
            for v, s in zip(items, slot.items or []):
                visit(v, s)

    visit(out, slots)
    return freed


def _churn_slots(slots: Node | None, mapped: dict[int, Mapped]) -> list[int]:
    """The null call's slot copy: each slot's bytes copied onto themselves as two swapped halves, so
    as many bytes are read and written as when a timed call copies an output of the slot's size in
    (a copy of a tensor onto its own addresses is skipped by torch, and a timed call that copies
    6 GB would otherwise exceed its null call by that copy's time on the judge's clock)."""
    freed: list[int] = []
    for leaf in tensor_leaves(slots) if slots is not None else []:
        t = mapped[int(leaf.buf or 0)].tensor
        flat = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        half = flat.numel() // 2
        if half:
            flat[:half].copy_(flat[half:2 * half])
            flat[half:2 * half].copy_(flat[:half])
        freed.append(flat.numel())
    return freed


def serve(sock: socket.socket, device: str, log_path: str, scratch: str, write_dirs: list[str]) -> int:
    """The forked child's whole life; returns its exit code."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    sys.dont_write_bytecode = True
    runner = Runner(sock, device)
    from egg.evaluate.runner_loop import loop

    return loop(runner, write_dirs)
