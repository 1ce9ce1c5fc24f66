"""Logging set-up. Tracebacks are rendered without local variables: those can hold keys."""

from __future__ import annotations

import logging
import sys
from typing import TextIO, cast

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str = "INFO", *, json: bool = False, stderr: bool = False) -> None:
    """Configure structlog (and the standard library's root logger) for a process; its
    lines go to standard output, or to standard error (a command whose output is data)."""
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(level=numeric, format="%(message)s")
    renderer: structlog.types.Processor
    if json:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    if json:
        processors.append(structlog.processors.format_exc_info)
    processors.append(renderer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(
            cast(TextIO, _StandardError()) if stderr else None
        ),
        cache_logger_on_first_use=True,
    )


class _StandardError:
    """Writes to whatever ``sys.stderr`` is at the time (a test may swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
