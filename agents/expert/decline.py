"""The one way the expert codegen says "not this problem": a one-line reason users see."""

from __future__ import annotations


class ExpertDecline(Exception):
    """The expert has no kernel for this program; the message says why (one line)."""
