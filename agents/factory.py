"""Which agents a run uses, built from its configuration.

* ``--llm none`` (the default): expert agents only (:mod:`agents.expert`).
* an LLM (``PROVIDER:MODEL``, ``replay:FILE``, or a chat model object passed to ``egg.optimize``):
  N LLM designers for stage 1 and one LLM agent per tuning focus for stage 2, all sharing one chat
  model (so a replay file is consumed in one global order) and one :class:`EndpointState` (so a
  dead endpoint stops them all at once); expert agents seed stage 1 when they have a template.

:func:`llm_setup` resolves the chat model before anything else, so the run can check the endpoint
(:func:`agents.llm.preflight.preflight_setup`) before it creates its run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from agents.llm.agent import LLMAgent
from agents.llm.cache import CachedChatModel
from agents.llm.config import LLMConfig, option_overrides, parse_llm_spec
from agents.llm.endpoint import EndpointState
from agents.llm.models import (
    adopt_chat_model,
    build_chat_model,
    chat_model_label,
    is_openai_protocol,
    request_options,
)
from agents.llm.replay import ReplayChatModel
from agents.llm.transcript import Transcript
from agents.protocol import Agent
from egg.config import RunConfig
from egg.vocabulary import Focus

TUNING_FOCUSES = (Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY)


@dataclass
class LLMSetup:
    """The LLM side of a run: how it calls (``cfg``), what it calls (``model``) and what the report
    should say about it (``notes``: options not sent, a user model's retries switched off)."""

    cfg: LLMConfig
    model: BaseChatModel
    notes: list[str] = field(default_factory=list)


def llm_setup(config: RunConfig, chat_model: BaseChatModel | None = None) -> LLMSetup | None:
    """The run's chat model and call settings; None for expert-only runs. One-line errors for a bad
    ``--llm`` spec."""
    if chat_model is None and config.llm == "none":
        return None
    overrides = option_overrides(config.llm_options)
    if chat_model is None:
        cfg = parse_llm_spec(config.llm, **overrides)
        return LLMSetup(cfg, build_chat_model(cfg), request_options(cfg)[1])
    base = LLMConfig(provider="python", python_label=chat_model_label(chat_model), **overrides)  # type: ignore[arg-type]
    model, notes = adopt_chat_model(chat_model, base)
    openai_like = is_openai_protocol(model)
    root = getattr(model, "root_client", None) if openai_like else None
    cfg = base.model_copy(update={
        # the user's model decides what it sends; these fields only describe it (logs, preflight)
        "model": getattr(model, "model_name", None),
        "base_url": str(root.base_url) if root is not None else None,
        "temperature": getattr(model, "temperature", None),
        "max_tokens": getattr(model, "max_tokens", None),
        "reasoning_effort": getattr(model, "reasoning_effort", None),
        "request_timeout_s": getattr(model, "request_timeout", None) or base.request_timeout_s,
        "checks_finish_reason": openai_like,
    })
    return LLMSetup(cfg, model, notes)


def _expert_agents(config: RunConfig) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    from agents.expert import build_expert_agents

    return build_expert_agents(config)


def build_agents(
    config: RunConfig, run_dir: Path, setup: LLMSetup | None = None
) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    """Stage-1 designers and stage-2 tuners (by focus) for this run."""
    if setup is None:
        return _expert_agents(config)
    cfg = setup.cfg
    transcript = Transcript.in_run_dir(run_dir)
    cached = CachedChatModel(inner=setup.model, transcript_path=transcript.path)
    if isinstance(setup.model, ReplayChatModel):
        # On resume, answers already in the transcript were consumed from the replay file.
        setup.model._next = cached.answered  # noqa: SLF001 - the replay position is ours to restore
    endpoint = EndpointState(cfg.label())

    def agent(name: str) -> LLMAgent:
        return LLMAgent(name, cfg, model=cached, transcript=transcript, endpoint=endpoint)

    designers: list[Agent] = [agent(f"llm-designer-{i + 1}") for i in range(config.budget.designers)]
    tuners: dict[Focus, list[Agent]] = {
        focus: [agent(f"llm-{focus.value.replace('_', '-')}")] for focus in TUNING_FOCUSES
    }
    seeds = _expert_agents(config)[0] if config.expert_seeds and _have_experts() else []
    return [*seeds, *designers], tuners


def _have_experts() -> bool:
    import importlib.util

    return importlib.util.find_spec("agents.expert") is not None
