"""Growing a set of fx nodes by their producers to a fixed point: the one loop behind a plain
elementwise chain (partition), a matmul's B-operand prologue and a norm's shared prologue
(prologue); each passes its own test of which producer may join."""

from __future__ import annotations

from collections.abc import Callable

from torch import fx


def grow(members: set[fx.Node], admit: Callable[[fx.Node], bool], skip: frozenset[fx.Node] = frozenset()) -> None:
    """Add to ``members`` every producer of a member (other than those in ``skip``, whose inputs are
    not followed) that ``admit`` accepts, until nothing changes: both sides of a diamond
    ``x -> (a, b) -> c`` join once ``a`` and ``b`` have. ``admit`` sees ``members`` as it grows."""
    changed = True
    while changed:
        changed = False
        for m in list(members - skip):
            for p in m.all_input_nodes:
                if p not in members and admit(p):
                    members.add(p)
                    changed = True
