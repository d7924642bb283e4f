"""Text rendering of principles for prompts.

Each principle is one bullet that starts with its id in brackets, so an agent can cite the
advice it followed (``[memory/coalesce-last-dim]``) and a reviewer can look it up with
``egg principles show ID``. Retrieval counts tokens on exactly this rendering, so what fits the
budget is what the prompt contains.
"""

from __future__ import annotations

from collections.abc import Iterable

from principles.schema import Principle


def render_principle(principle: Principle) -> str:
    text = " ".join(principle.text.split())  # folded YAML may still carry newlines; a bullet is one line
    line = f"- [{principle.id}] {text}"
    if principle.template:
        line += f" (reference template: {principle.template})"
    return line


def render_principles(principles: Iterable[Principle]) -> str:
    """One bullet per principle, in the given order (retrieval's order: most specific first)."""
    return "\n".join(render_principle(p) for p in principles)
