"""What plain ``torch.fx.symbolic_trace`` cannot trace, made traceable for the expert.

* **Factories sized by the input.** ``torch.ones(x.shape[-2], x.shape[-1], device=x.device)``
  (a causal mask) or ``torch.arange(k.shape[1])`` (KV-cache positions) pass fx proxies where
  torch's C argument parser wants ints: the call fails. While tracing, :func:`traceable` makes
  those factories record a ``call_function`` node when any argument is a proxy (the sizes stay
  graph values read at run time: nothing is specialised to the traced shapes).
* **Item assignment.** ``cache[rows, positions] = new`` calls ``Proxy.__setitem__``, which fx
  does not define. While tracing it records ``operator.setitem(cache, index, new)``.
  :func:`functionalise_setitem` then rewrites that mutation into the out-of-place
  :func:`setitem_copy` (later readers of ``cache`` read the copy), so the expert can compute it
  with a kernel that writes a fresh tensor and the candidate never mutates an input. Assignments
  into a parameter/buffer or through a view (aliasing the expert does not model) are declined.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Iterator
from typing import Any

import structlog
import torch
from torch import fx

log = structlog.get_logger(__name__)

# torch factories that take sizes (or scalar bounds) as positional or keyword ints
FACTORIES = ("ones", "zeros", "full", "empty", "arange", "eye", "linspace", "tril_indices", "triu_indices",
             "rand", "randn", "randint", "randperm")
# ops whose result may share storage with their first argument (a write through it is a write to it)
_ALIASING = {"getitem", "select", "diagonal", "identity", "pos", "contiguous", "detach", "to", "type", "type_as",
             "float", "half", "double", "bfloat16", "real", "imag", "unfold", "dropout", "dropout1d",
             "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}
_METADATA = {"getattr", "size", "dim", "numel", "stride"}  # read shapes/dtypes only


def setitem_copy(base: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """``base[index] = value`` out of place: a copy of ``base`` with the assignment applied."""
    out = base.clone()
    out[index] = value
    return out


def _has_proxy(value: Any) -> bool:
    if isinstance(value, fx.Proxy):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_proxy(v) for v in value)
    if isinstance(value, dict):
        return any(_has_proxy(v) for v in value.values())
    return False


def _recording(fn: Callable[..., Any], tracer: fx.Tracer) -> Callable[..., Any]:
    @functools.wraps(fn)
    def factory(*args: Any, **kwargs: Any) -> Any:
        if _has_proxy((args, kwargs)):
            return tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)

    return factory


def _setitem(self: fx.Proxy, index: Any, value: Any) -> None:
    self.tracer.create_proxy("call_function", operator.setitem, (self, index, value), {})


@contextlib.contextmanager
def traceable(tracer: fx.Tracer) -> Iterator[None]:
    """While active, ``tracer`` records input-sized factories and item assignment (see module doc).
    Callers serialise tracing (the expert holds a lock): torch's namespace is patched meanwhile."""
    saved = {name: getattr(torch, name) for name in FACTORIES if hasattr(torch, name)}
    had_setitem = "__setitem__" in vars(fx.Proxy)
    try:
        for name, fn in saved.items():
            setattr(torch, name, _recording(fn, tracer))
        fx.Proxy.__setitem__ = _setitem  # type: ignore[method-assign]
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        if not had_setitem:
            del fx.Proxy.__setitem__


def _key(node: fx.Node) -> str:
    from egg.analysis.optable import op_key

    if node.op == "call_method":
        return op_key(f"Tensor.{node.target}")
    if node.op == "call_function":
        from agents.expert.lowering import qualified

        return op_key(qualified(node.target))
    return ""


def _aliases(node: fx.Node, gm: fx.GraphModule) -> bool:
    """Whether ``node``'s value may share storage with another value of the graph."""
    from egg.analysis.optable import classify, module_key

    if node.op == "placeholder" or node.target is setitem_copy:
        return False
    if node.op == "call_module":
        key = module_key(type(gm.get_submodule(str(node.target))).__name__)
    elif node.op in ("call_function", "call_method"):
        key = _key(node)
    else:
        return True  # get_attr: module state
    return key in _ALIASING or classify(key) is None


def _is_plain_clone(node: fx.Node) -> bool:
    return (node.op == "call_method" and node.target == "clone") or node.target is torch.clone


def functionalise_setitem(gm: fx.GraphModule) -> int:
    """Rewrite every ``operator.setitem`` of ``gm`` into :func:`setitem_copy`; how many."""
    from agents.expert.trace import ExpertDecline  # trace imports this module

    graph = gm.graph
    done = 0
    for node in list(graph.nodes):
        if not (node.op == "call_function" and node.target is operator.setitem):
            continue
        base, index, value = node.args
        if not isinstance(base, fx.Node):
            raise ExpertDecline(f"item assignment into a non-tensor ({node.name})")
        if base.op == "get_attr":
            raise ExpertDecline(f"forward assigns into parameter/buffer {base.target} ({node.name})")
        if _aliases(base, gm):
            raise ExpertDecline(f"item assignment ({node.name}) writes through a view: aliasing is not modelled")
        later: set[fx.Node] = set()
        cursor = node.next
        while cursor.op != "root":
            later.add(cursor)
            cursor = cursor.next
        for user in base.users:
            if user is not node and user not in later and _aliases(user, gm) and _key(user) not in _METADATA:
                raise ExpertDecline(f"item assignment ({node.name}) into {base.name}, which a view ({user.name}) "
                                    "also reads: aliasing is not modelled")
        # x = x.clone(); x[i] = v  ->  setitem_copy(x, i, v): the copy is the clone (which nothing
        # reads before the assignment)
        elide = _is_plain_clone(base) and not base.kwargs and all(u is node or u in later for u in base.users)
        source = base.args[0] if elide else base
        with graph.inserting_after(node):
            copy = graph.call_function(setitem_copy, (source, index, value))
        for user in list(base.users):
            if user in later and user is not copy:
                user.replace_input_with(base, copy)
        graph.erase_node(node)
        if source is not base:
            graph.erase_node(base)
        done += 1
        log.debug("expert.functionalised_setitem", node=copy.name, base=source.name)
    if done:
        graph.lint()
        gm.recompile()
    return done
