"""Which agents a run uses, built from its configuration.

* ``--llm none`` (the default): expert agents only (:mod:`agents.expert`).
* an LLM (``PROVIDER:MODEL``, ``replay:FILE``, or a scripted model in tests): N LLM designers for
  stage 1 and one LLM agent per tuning focus for stage 2, all sharing one chat model (so a replay
  file is consumed in one global order); expert agents seed stage 1 when they have a template.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models import BaseChatModel

from agents.llm.agent import LLMAgent
from agents.llm.cache import CachedChatModel
from agents.llm.chat import build_chat_model
from agents.llm.config import LLMConfig, parse_llm_spec
from agents.llm.replay import ReplayChatModel
from agents.llm.transcript import Transcript
from agents.protocol import Agent
from egg.config import RunConfig
from egg.vocabulary import Focus

TUNING_FOCUSES = (Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY)


def _expert_agents(config: RunConfig) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    from agents.expert import build_expert_agents

    return build_expert_agents(config)


def build_agents(
    config: RunConfig, run_dir: Path, chat_model: BaseChatModel | None = None
) -> tuple[list[Agent], dict[Focus, list[Agent]]]:
    """Stage-1 designers and stage-2 tuners (by focus) for this run."""
    if config.llm == "none" and chat_model is None:
        return _expert_agents(config)
    cfg = LLMConfig(provider="scripted") if chat_model is not None else parse_llm_spec(config.llm)
    transcript = Transcript.in_run_dir(run_dir)
    inner = chat_model if chat_model is not None else build_chat_model(cfg)
    cached = CachedChatModel(inner=inner, transcript_path=transcript.path)
    if isinstance(inner, ReplayChatModel):
        # On resume, answers already in the transcript were consumed from the replay file.
        inner._next = cached.answered  # noqa: SLF001 - the replay position is ours to restore
    designers: list[Agent] = [
        LLMAgent(f"llm-designer-{i + 1}", cfg, model=cached, transcript=transcript)
        for i in range(config.budget.designers)
    ]
    tuners: dict[Focus, list[Agent]] = {
        focus: [LLMAgent(f"llm-{focus.value.replace('_', '-')}", cfg, model=cached, transcript=transcript)]
        for focus in TUNING_FOCUSES
    }
    seeds = _expert_agents(config)[0] if config.expert_seeds and _have_experts() else []
    return [*seeds, *designers], tuners


def _have_experts() -> bool:
    import importlib.util

    return importlib.util.find_spec("agents.expert") is not None
