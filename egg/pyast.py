"""``ast.parse`` that is safe to call from several threads at once.

CPython 3.11 before 3.11.9 keeps the AST converter's recursion counter in interpreter-wide state,
so two threads parsing at once can raise ``SystemError: AST constructor recursion depth mismatch``
(cpython gh-106905). EGG parses from threads: ``egg kernelbench --workers N`` runs N evaluations in
one process (static checks, ablation), and LangGraph runs fanned-out agents in a thread pool. Seen in
CI on 2026-12-01: a correct KernelBench sample reported as an ``error``. One lock around every parse
costs nothing measurable (a parse of a candidate file takes about a millisecond).
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", **kwargs: Any) -> ast.Module:
    """:func:`ast.parse`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename, **kwargs)
