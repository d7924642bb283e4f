"""The ``--llm-*`` flags shared by ``egg optimize`` and ``egg kernelbench``.

Each flag has an ``EGG_LLM_*`` variable (:data:`egg.config.LLM_OPTION_SOURCES`); a flag given on
the command line wins, then the variable, then the default. Values stay strings here so that one
function (:func:`egg.config.llm_options`) checks them all, with one-line errors naming their source.
"""

from __future__ import annotations

import argparse

from egg.config import LLM_OPTION_SOURCES, LLMOptions, llm_options

EXIT_LLM_FAILED = 3  # the run finished, but its LLM part failed (report.json: llm_failure)

_HELP = {
    "timeout_s": "seconds one LLM request may take, e.g. 120 or 2m",
    "max_retries": "retries of a failed LLM request (429, 5xx, timeouts, cut streams)",
    "temperature": "sampling temperature (default: not sent, the server's default)",
    "max_tokens": "output tokens per answer (0: not sent)",
    "reasoning_effort": "none|minimal|low|medium|high|xhigh, sent to models that take it",
    "streaming": "on|off: stream answers (a stream cut mid-body is retried)",
}


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = LLMOptions()
    for name, (flag, var) in LLM_OPTION_SOURCES.items():
        default = getattr(defaults, name)
        shown = "not sent" if default is None else ("on" if default is True else "off" if default is False else default)
        parser.add_argument(flag, dest=f"llm_{name}", default=None, metavar="V",
                            help=f"{_HELP[name]} (env {var}; default {shown})")


def llm_options_from(args: argparse.Namespace) -> LLMOptions:
    return llm_options({name: getattr(args, f"llm_{name}") for name in LLM_OPTION_SOURCES})
