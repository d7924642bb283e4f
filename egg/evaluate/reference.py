"""The reference, in the judge: the problem's ``Model`` built after the seed, fresh inputs, the
expected outputs, and what the reference must at least move through memory.

Nothing here ever sees candidate code. The problem runs from the source text the judge read once
(:mod:`egg.evaluate.problem_source`).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import structlog
import torch

from egg.evaluate.anchor import TF32Emulation, exact_model, tf32_off, upcast
from egg.evaluate.correctness import clone_tree, tensors_of, to_device
from egg.evaluate.problem_source import exec_problem

log = structlog.get_logger(__name__)


class Reference:
    def __init__(self, source: str, filename: str, name: str, shape_set: str, overrides: dict[str, Any],
                 seed: int, device: torch.device) -> None:
        self.shape_set, self.device = shape_set, device
        self._exact: dict[torch.dtype, torch.nn.Module] = {}
        self.module = exec_problem(source, filename, name, overrides)
        try:
            torch.manual_seed(seed)
            init_inputs = self.module.get_init_inputs()
            torch.manual_seed(seed)
            self.model = self.module.Model(*init_inputs).to(device)
        finally:  # registered only while it runs (pickle, dataclasses): a long-lived judge sees many problems
            sys.modules.pop(self.module.__name__, None)

    def inputs(self, seed: int) -> list[Any]:
        """Fresh inputs under ``seed``, drawn on the evaluation device.

        KernelBench's ``get_inputs()`` builds multi-GB tensors with the default (CPU) device; drawing
        them on the CPU and copying took ~10 s per trial on the H200 machine. Tensors a problem
        places explicitly are moved; values depend on the device's generator, seeded alike.
        """
        torch.manual_seed(seed)
        with torch.device(self.device):
            made = to_device(self.module.get_inputs(), self.device)
        return list(made) if isinstance(made, (tuple, list)) else [made]

    def run_exact(self, inputs: list[Any], dtype: torch.dtype = torch.float32,
                  emulate_tf32: tuple[bool, bool] | None = None) -> Any:
        """The reference in ``dtype`` (fp32 or fp64; TF32 off) on the same values
        (:mod:`egg.evaluate.anchor`); with ``emulate_tf32`` = (convolutions, matmuls), TF32
        arithmetic emulated where those flags allow it (:class:`~egg.evaluate.anchor.TF32Emulation`:
        the accuracy they promise). The copy is made on first use, so problems that never need it
        never pay its memory."""
        if dtype not in self._exact:
            self._exact[dtype] = exact_model(self.model, dtype)
        emulation = TF32Emulation(*emulate_tf32) if emulate_tf32 else contextlib.nullcontext()
        with torch.no_grad(), tf32_off(), emulation:
            return self._exact[dtype](*upcast(inputs, dtype))

    def run(self, inputs: list[Any]) -> tuple[Any, list[tuple[int, int]]]:
        """The expected outputs for ``inputs`` (run on private copies) and which outputs alias
        which inputs (an identity-like reference may legitimately return an input)."""
        own = clone_tree(inputs)
        out = self.model(*own)
        pairs = aliases(out, own)
        return (clone_tree(out) if pairs else out), pairs


def aliases(out: Any, inputs: Any) -> list[tuple[int, int]]:
    pairs = []
    outs, ins = tensors_of(out), tensors_of(inputs)
    for i, o in enumerate(outs):
        for j, x in enumerate(ins):
            if _overlap(o, x):
                pairs.append((i, j))
    return pairs


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        sa, sb = a.untyped_storage(), b.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return False
    if not sa.nbytes() or not sb.nbytes() or a.device != b.device:
        return False
    return sa.data_ptr() < sb.data_ptr() + sb.nbytes() and sb.data_ptr() < sa.data_ptr() + sa.nbytes()


def output_bytes(out: Any, alias_pairs: list[tuple[int, int]]) -> int:
    """Bytes the outputs occupy: each output tensor's dense size, or its storage if smaller (an
    expanded view writes only its storage); outputs that alias an input count nothing."""
    aliased = {i for i, _ in alias_pairs}
    total = 0
    for i, t in enumerate(tensors_of(out)):
        if i in aliased:
            continue
        dense = t.numel() * t.element_size()
        try:
            total += min(dense, t.untyped_storage().nbytes())
        except (RuntimeError, NotImplementedError):
            total += dense
    return total


def input_bytes_read(model: torch.nn.Module, inputs: list[Any]) -> tuple[int, str | None]:
    """A lower bound on the input bytes the reference must read: elements whose gradient is nonzero.

    An element with a nonzero gradient of a random projection of the outputs influences the
    output, so any correct candidate has to read it (the reverse does not hold: relu's inactive
    half has zero gradient although it is read, which only makes the bound smaller). Integer
    inputs and inputs autograd cannot follow count nothing. Returns (bytes, why not counted).
    """
    leaves = [t for t in tensors_of(inputs) if t.is_floating_point()]
    if not leaves:
        return 0, None
    frozen = [p for p in model.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    try:
        # Views of the inputs, not copies (a KernelBench input is 4-8 GB); a reference that writes
        # into its inputs then fails here, before writing, and the bound is outputs only.
        probes = {id(t): t.detach().requires_grad_(True) for t in leaves}
        tree = [probes.get(id(x), x) if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.enable_grad():
            out = model(*tree)
            outs = [o for o in tensors_of(out) if o.requires_grad and o.is_floating_point()]
            if not outs:
                return 0, "the reference's outputs do not depend on its floating-point inputs through autograd"
            gen = torch.Generator(device=outs[0].device).manual_seed(0)
            # the random projection goes in as the outputs' gradient: no product or sum of outputs size
            weights = [torch.randn(o.shape, generator=gen, device=o.device).to(o.dtype) for o in outs]
            grads = torch.autograd.grad(outs, list(probes.values()), grad_outputs=weights, allow_unused=True)
            del out, outs, weights
        return sum(int(torch.count_nonzero(g)) * t.element_size() for g, t in zip(grads, probes.values())
                   if g is not None), None
    except Exception as exc:  # noqa: BLE001 - the bound is then outputs only, and the verdict says so
        return 0, f"input bytes not counted ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})"
    finally:
        for p in frozen:
            p.requires_grad_(True)
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
