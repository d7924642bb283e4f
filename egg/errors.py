"""Errors that reach the user as one line and exit code 2.

Anything a user can fix (a bad path, a malformed problem file, an invalid pack, a wrong flag) is
raised as :class:`EggInputError`. The CLI prints ``egg: error: <message>`` and exits 2; library
callers get the exception with the same one-line message. Never put a traceback in the message.
"""

from __future__ import annotations

EXIT_USAGE = 2


class EggInputError(ValueError):
    """Bad input from the user: a file, a field, a flag. The message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def where(path: object, field: str | None = None) -> str:
    """Format ``path`` (and optionally a field inside it) for a one-line error message."""
    return f"{path}: {field}" if field else str(path)
