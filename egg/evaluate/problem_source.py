"""Executing a problem from its source text, never from the file again.

The judge reads a problem's read-only copy once, checks its hash and keeps the text; every shape
set is then executed from that text (a candidate that rewrites the file on disk changes nothing).
The runner gets the same text from the judge. The source is registered with :mod:`linecache`
under the copy's path, so tracebacks and ``inspect`` (which torch.compile may use) still work.
"""

from __future__ import annotations

import itertools
import linecache
import re
import sys
import types
from typing import Any

_counter = itertools.count()


def exec_problem(source: str, filename: str, name: str, overrides: dict[str, Any] | None = None) -> types.ModuleType:
    """A fresh module holding the problem, with a shape set's constant overrides applied.

    ``get_inputs``/``get_init_inputs`` read module globals when called, so setting the constants
    on the module after it ran is enough for KernelBench-style problems.
    """
    module_name = f"egg_problem_{re.sub(r'[^0-9A-Za-z_]', '_', name)}_{next(_counter)}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    sys.modules[module_name] = module  # dataclasses, pickle and torch.load resolve classes through it
    try:
        exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - the problem is trusted code
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    for key, value in (overrides or {}).items():
        setattr(module, key, value)
    return module
