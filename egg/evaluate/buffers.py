"""Judge-owned memory shared with a runner: input buffers and output slots.

The judge allocates every tensor the candidate reads or writes and shares it with the runner:

* ``file`` (CPU): a file in the judge's private directory, mapped by both with
  ``torch.from_file(..., shared=True)``;
* ``cuda-ipc`` (GPU): device memory from a private :class:`torch.cuda.MemPool`, so the shared
  allocations never sit in a caching-allocator segment beside the judge's own tensors (CUDA IPC
  maps a whole segment); the runner rebuilds it from the handle arguments, sent as JSON;
* ``host-mirror`` (GPU, fallback when CUDA IPC fails its self-test): a shared file as on CPU,
  which the runner copies to and from a device mirror outside the timed region.

Structures (the inputs ``get_inputs()`` returns, the reference's outputs) travel as
:class:`~egg.evaluate.messages.Node` trees whose tensor leaves name buffers by id.
"""

from __future__ import annotations

import base64
import mmap
import os
import shutil
import struct
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from egg.evaluate.messages import BufferSpec, Node

_SCALARS = (bool, int, float, str, type(None))


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_of(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value


def _storage_elements(shape: list[int], stride: list[int]) -> int:
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(shape, stride))


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class SharedBuffer:
    """One buffer: ``tensor`` is the judge's view of it (device memory, or host memory for the
    ``file`` and ``host-mirror`` transports), ``spec`` what the runner needs to map it."""

    def __init__(self, id_: int, tensor: torch.Tensor, spec: BufferSpec, device: torch.device) -> None:
        self.id, self.tensor, self.spec, self.device = id_, tensor, spec, device

    def write(self, src: torch.Tensor) -> None:
        self.tensor.copy_(src)

    def snapshot(self) -> torch.Tensor:
        """A private copy on the evaluation device: what the runner writes later changes nothing."""
        return self.tensor.to(self.device, copy=True)


class Arena:
    """The judge's buffers for one runner, in sets: ``begin_set`` before each set, ``release`` for a
    superseded one, ``close`` for all of them (and the files on CPU).

    With ``cuda-ipc`` each set comes from its own :class:`torch.cuda.MemPool`. A live pool keeps every
    block it ever held (``torch.cuda.empty_cache`` frees only pools nobody holds): one pool for the
    judge's lifetime kept the largest problem's buffers reserved across all later evaluations, and
    one per evaluation kept every superseded set reserved until its end. A set's pool goes when the
    set is released, and the judge's ``empty_cache`` returns it.

    CUDA IPC also counts consumers. A shared block the judge frees while the runner's mapping of it
    is counted waits in PyTorch's "limbo" until the count drops, which the runner's process does when
    it frees its tensor. A runner killed at the end of an evaluation (or one whose candidate keeps a
    reference) never does, so every evaluation left its last set, 10-20 GB on a KernelBench problem,
    reserved in the judge for good: the H200 sweep of 2026-12-02 saw idle judges holding 46-80 GB.
    :meth:`forget_consumers`, called once the runner's session is dead, clears those counts.
    (That needs every process of the runner gone: the judge kills its whole session, and the runner
    cannot start a new one, :func:`egg.evaluate.sandbox.forbid_new_sessions`; ``RunnerHandle.reaped``
    is true only when nothing of the session is left.)
    """

    def __init__(self, device: torch.device, transport: str) -> None:
        self.device, self.transport = device, transport
        self.pool: Any = None
        self._previous: Any = None  # the superseded set's pool, until that set is gone
        self.root = Path(tempfile.mkdtemp(prefix="egg-buffers-"))
        os.chmod(self.root, 0o700)
        self.buffers: dict[int, SharedBuffer] = {}
        self.counters: list[tuple[bytes, int]] = []  # (ref-counter file, slot) of every block shared
        self._next = 0

    def begin_set(self) -> None:
        """Allocate what follows from a new pool (its own addresses); the last set's pool is kept
        until :meth:`end_previous_set`."""
        if self.transport == "cuda-ipc":
            self._previous, self.pool = self.pool, torch.cuda.MemPool()

    def end_previous_set(self) -> None:
        """The superseded set is released and the judge holds no tensor of it: its pool may go."""
        self._previous = None

    def alloc(self, shape: list[int], stride: list[int], dtype: torch.dtype) -> SharedBuffer:
        self._next += 1
        n = _storage_elements(shape, stride)
        if self.transport == "cuda-ipc":
            if self.pool is None:
                self.begin_set()
            with torch.cuda.use_mem_pool(self.pool):
                base = torch.empty(max(n, 1), dtype=dtype, device=self.device)
            tensor = base.as_strided(shape, stride)
            ipc = _ipc_args(base)
            self.counters.append((_unb64(ipc["ref_counter_handle"]) or b"", int(ipc["ref_counter_offset"])))
            spec = BufferSpec(id=self._next, transport="cuda-ipc", shape=shape, stride=stride, dtype=dtype_name(dtype),
                              device=str(self.device), ipc=ipc)
        else:
            path = self.root / f"buf-{self._next}"
            size = max(n, 1)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.ftruncate(fd, size * torch.empty((), dtype=dtype).element_size())
            os.close(fd)
            tensor = torch.from_file(str(path), shared=True, size=size, dtype=dtype).as_strided(shape, stride)
            spec = BufferSpec(id=self._next, transport="host-mirror" if self.transport == "host-mirror" else "file",
                              shape=shape, stride=stride, dtype=dtype_name(dtype), device=str(self.device),
                              path=str(path))
        buf = SharedBuffer(self._next, tensor, spec, self.device)
        self.buffers[buf.id] = buf
        return buf

    def live_bytes(self) -> int:
        """Bytes of the buffers the arena holds now."""
        return sum(b.tensor.untyped_storage().nbytes() for b in self.buffers.values())

    def release(self, bufs: list[SharedBuffer]) -> None:
        """Forget a superseded set (the runner has been sent its replacement): its memory goes once
        the judge's references to it are gone and the runner has let go of its mapping."""
        for buf in bufs:
            self.buffers.pop(buf.id, None)
            if buf.spec.path:
                Path(buf.spec.path).unlink(missing_ok=True)

    def forget_consumers(self) -> int:
        """Clear the consumer counts of every block this arena shared; only once no process that
        mapped them is alive (the runner's session was killed and found empty). Returns how many counts
        were still held, i.e. blocks that would otherwise have stayed reserved for good."""
        held = 0
        for handle, slot in self.counters:
            held += _clear_ref_count(handle, slot)
        self.counters.clear()
        return held

    def close(self) -> None:
        self.buffers.clear()
        self.pool = self._previous = None
        shutil.rmtree(self.root, ignore_errors=True)


# PyTorch's CUDA IPC reference counters: int64 slots in a POSIX shared-memory file named by the
# handle, after the 64-byte header of its RefcountedMapAllocator (at::map_alloc_alignment); the
# consumer's deleter decrements its slot, and the producer frees a block whose slot is 0.
_REF_HEADER = 64


def _clear_ref_count(handle: bytes, slot: int) -> int:
    if not handle:
        return 0
    path = Path("/dev/shm") / handle.decode().lstrip("/")
    try:
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
            at = _REF_HEADER + 8 * slot
            if at + 8 > len(m):
                return 0
            (count,) = struct.unpack_from("q", m, at)
            if count > 0:
                struct.pack_into("q", m, at, 0)
            return int(count > 0)
    except OSError:  # the file went with its last block: nothing is held
        return 0


def _ipc_args(base: torch.Tensor) -> dict[str, Any]:
    storage = base._typed_storage()
    (device, handle, size_bytes, offset_bytes, ref_handle, ref_offset, event_handle,
     event_sync) = storage._share_cuda_()
    return {"device": int(device), "handle": _b64(handle), "storage_size_bytes": int(size_bytes),
            "storage_offset_bytes": int(offset_bytes), "ref_counter_handle": _b64(ref_handle),
            "ref_counter_offset": int(ref_offset), "event_handle": _b64(event_handle),
            "event_sync_required": bool(event_sync), "numel": int(base.numel())}


# -- trees ---------------------------------------------------------------------------------------


def layout(tree: Any) -> tuple:
    """What the buffers depend on: the structure and each tensor's shape, stride and dtype."""
    if isinstance(tree, torch.Tensor):
        return ("t", tuple(tree.shape), tuple(tree.stride()), tree.dtype)
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(layout(t) for t in tree))
    if isinstance(tree, dict):
        return ("d", tuple((k, layout(v)) for k, v in tree.items()))
    return ("v",)


def share_tree(tree: Any, arena: Arena) -> tuple[Node, list[SharedBuffer]]:
    """Buffers for every tensor leaf of ``tree`` (same shape, stride, dtype); the Node names them."""
    bufs: list[SharedBuffer] = []

    def visit(t: Any) -> Node:
        if isinstance(t, torch.Tensor):
            if t.layout != torch.strided:
                raise TypeError(f"a {t.layout} tensor cannot be shared with the runner")
            stride = list(t.stride())
            if t.numel() > 1 and 0 in stride:  # an expanded view cannot be written into: share it dense
                stride = list(torch.empty(t.shape, device="meta").stride())
            buf = arena.alloc(list(t.shape), stride, t.dtype)
            bufs.append(buf)
            return Node(kind="tensor", buf=buf.id, type="Tensor")
        return _node(t, visit)

    return visit(tree), bufs


def fill_tree(tree: Any, bufs: list[SharedBuffer]) -> Node:
    """Write ``tree``'s tensors into ``bufs`` (in leaf order); the Node carries its scalar values."""
    it = iter(bufs)

    def visit(t: Any) -> Node:
        if isinstance(t, torch.Tensor):
            buf = next(it)
            buf.write(t)
            return Node(kind="tensor", buf=buf.id, type="Tensor")
        return _node(t, visit)

    return visit(tree)


def _node(t: Any, visit: Any) -> Node:
    if isinstance(t, _SCALARS):
        return Node(kind="value", value=t, type=type(t).__name__)
    if isinstance(t, torch.dtype):
        return Node(kind="dtype", dtype=dtype_name(t))
    if isinstance(t, (tuple, list)):
        return Node(kind="seq", type=type(t).__name__, items=[visit(x) for x in t])
    if isinstance(t, dict) and all(isinstance(k, str) for k in t):
        return Node(kind="dict", keys=list(t), items=[visit(v) for v in t.values()])
    raise TypeError(f"a {type(t).__name__} cannot cross to the runner (tensors, scalars, tuples, lists, dicts)")


def describe(tree: Any) -> Node:
    """The structure of a candidate's output as the judge compares it: exact type names included."""
    if isinstance(tree, torch.Tensor):
        return Node(kind="tensor", type=f"{type(tree).__module__}.{type(tree).__qualname__}",
                    shape=list(tree.shape), dtype=dtype_name(tree.dtype), device=str(tree.device))
    if isinstance(tree, _SCALARS):
        return Node(kind="value", value=tree, type=type(tree).__name__)
    if isinstance(tree, torch.dtype):
        return Node(kind="dtype", dtype=dtype_name(tree))
    if type(tree) in (tuple, list):
        return Node(kind="seq", type=type(tree).__name__, items=[describe(x) for x in tree[:4096]])
    if type(tree) is dict and all(isinstance(k, str) for k in tree):
        return Node(kind="dict", keys=[k[:300] for k in tree][:4096], items=[describe(v) for v in list(tree.values())[:4096]])
    return Node(kind="other", type=f"{type(tree).__module__}.{type(tree).__qualname__}"[:300])


def tensor_leaves(node: Node) -> list[Node]:
    if node.kind == "tensor":
        return [node]
    return [leaf for item in node.items or [] for leaf in tensor_leaves(item)]


# -- the runner's side -------------------------------------------------------------------------


class Mapped:
    """A buffer as the runner sees it: ``tensor`` is what the candidate gets. With the
    ``host-mirror`` transport it is a device copy that :meth:`pull` and :meth:`push` keep in step
    with the shared host memory (outside the timed region)."""

    def __init__(self, spec: BufferSpec) -> None:
        self.spec = spec
        dtype = dtype_of(spec.dtype)
        self.host: torch.Tensor | None = None
        if spec.transport == "cuda-ipc":
            self.tensor = _rebuild_ipc(spec, dtype)
        else:
            n = max(_storage_elements(spec.shape, spec.stride), 1)
            shared = torch.from_file(str(spec.path), shared=True, size=n, dtype=dtype).as_strided(spec.shape, spec.stride)
            if spec.transport == "file":
                self.tensor = shared
            else:
                self.host = shared
                self.tensor = torch.empty_strided(spec.shape, spec.stride, dtype=dtype, device=spec.device)

    def pull(self) -> None:
        if self.host is not None:
            self.tensor.copy_(self.host)

    def push(self) -> None:
        if self.host is not None:
            self.host.copy_(self.tensor)


def _rebuild_ipc(spec: BufferSpec, dtype: torch.dtype) -> torch.Tensor:
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    a = spec.ipc or {}
    base = rebuild_cuda_tensor(
        torch.Tensor, torch.Size([a["numel"]]), (1,), 0, torch.storage.TypedStorage, dtype, a["device"],
        _unb64(a["handle"]), a["storage_size_bytes"], a["storage_offset_bytes"], False,
        _unb64(a["ref_counter_handle"]), a["ref_counter_offset"], _unb64(a["event_handle"]), a["event_sync_required"],
    )
    return base.as_strided(spec.shape, spec.stride)


def build_tree(node: Node, mapped: Mapping[int, Mapped | torch.Tensor]) -> Any:
    """The Python structure a Node describes, tensor leaves taken from ``mapped`` (by buffer id: a
    mapped buffer's tensor, or a tensor itself)."""
    if node.kind == "tensor":
        leaf = mapped[int(node.buf or 0)]
        return leaf if isinstance(leaf, torch.Tensor) else leaf.tensor
    if node.kind == "value":
        return node.value
    if node.kind == "dtype":
        return dtype_of(str(node.dtype))
    items = [build_tree(n, mapped) for n in node.items or []]
    if node.kind == "dict":
        return dict(zip(node.keys or [], items))
    return tuple(items) if node.type == "tuple" else items
