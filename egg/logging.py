"""structlog, configured once for the whole process.

Library modules do ``log = structlog.get_logger(__name__)`` and never print. The CLI calls
:func:`configure_logging` once; ``--json-logs`` switches to one JSON object per line for machines.
Logs go to stderr so that stdout stays clean for results (``egg eval --json``). The Python API
calls :func:`ensure_logging`: warnings and errors only (``EGG_LOG_LEVEL`` to change it), unless
the program has configured structlog itself, which is then left alone.
"""

from __future__ import annotations

import logging
import os
import sys

import structlog

_configured = False


class _StderrLogger:
    """Writes each rendered line to whatever ``sys.stderr`` is *now*.

    structlog's PrintLogger binds the stream once; when that stream is replaced and closed (test
    capture, a redirected notebook cell), every later log call would raise. Resolving it per call
    keeps logging from ever breaking the work it describes.
    """

    def msg(self, message: str) -> None:
        stream = sys.stderr
        try:
            stream.write(message + "\n")
            stream.flush()
        except (ValueError, OSError):  # closed or broken stream: drop the line, never the work
            pass

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


def _logger_factory(*args: object) -> _StderrLogger:
    return _StderrLogger()


def configure_logging(*, json_logs: bool = False, level: str = "info") -> None:
    """Configure structlog and stdlib logging. Safe to call more than once; the last call wins."""
    global _configured
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json_logs:
        processors += [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    else:
        processors += [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_logger_factory,
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr, force=True)
    _configured = True


def ensure_logging() -> None:
    """Library use without the CLI: log at ``EGG_LOG_LEVEL`` (default warning) unless logging was
    configured already, by us or by the program (``structlog.configure``)."""
    if not _configured and not structlog.is_configured():
        configure_logging(level=os.environ.get("EGG_LOG_LEVEL", "warning"))
