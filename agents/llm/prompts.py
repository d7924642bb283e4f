"""Prompt building: jinja2 templates in ``agents/llm/prompts/`` rendered for an AgentTask.

Templates are files so a reader can see (and ``egg prompt`` can print) exactly what a model is
told. Stage 1 uses ``design.j2``; stage 2 uses ``tuning_<focus>.j2``, which extends
``tuning.j2`` with what that focus means. ``repair.j2`` is the follow-up for a malformed answer
(or, with ``shorter``, for one cut off at the output-token limit).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from agents.protocol import AgentTask
from egg import pyast
from egg.problem import class_init_params
from egg.vocabulary import STAGE_FOCUSES, Backend, Stage

TEMPLATE_DIR = Path(__file__).parent / "prompts"
_BACKEND_NAMES = {Backend.TRITON: "Triton", Backend.CUDA: "CUDA C++"}
_STAGE_TITLES = {Stage.ALGORITHM_DESIGN: "algorithm design", Stage.HARDWARE_TUNING: "hardware tuning"}


@lru_cache(maxsize=1)
def _env() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=StrictUndefined,  # a typo in a template fails loudly instead of printing ""
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # plain text, not HTML
        keep_trailing_newline=True,  # an include ends with its newline, keeping blank lines
    )


def _problem_facts(source: str) -> tuple[str, bool]:
    """The Model constructor signature and whether TF32 is forbidden (no ``ALLOW_TF32 = True``)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return "(as in Model)", True
    params = class_init_params(tree, "Model")
    signature = "(" + ", ".join(["self", *(params or [])]) + ")"
    allow_tf32 = False
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "ALLOW_TF32" for t in node.targets)
            and isinstance(node.value, ast.Constant)
        ):
            allow_tf32 = bool(node.value.value)
    return signature, not allow_tf32


def _context(task: AgentTask) -> dict[str, object]:
    signature, forbid_tf32 = _problem_facts(task.problem_source)
    return {
        "task": task,
        "backend": task.backend.value,
        "backend_name": _BACKEND_NAMES[task.backend],
        "stage_number": 1 if task.stage is Stage.ALGORITHM_DESIGN else 2,
        "stage_title": _STAGE_TITLES[task.stage],
        "focus": task.focus.value,
        "init_signature": signature,
        "forbid_tf32": forbid_tf32,
    }


def _user_template(task: AgentTask) -> str:
    if task.focus not in STAGE_FOCUSES[task.stage]:
        raise ValueError(f"focus {task.focus.value} does not belong to stage {task.stage.value}")
    if task.stage is Stage.ALGORITHM_DESIGN:
        return "design.j2"
    if task.parent is None:
        raise ValueError("a stage-2 (hardware tuning) task needs a parent candidate to refine")
    return f"tuning_{task.focus.value}.j2"


def render_system(task: AgentTask) -> str:
    return _env().get_template("system.j2").render(_context(task)).strip()


def render_user(task: AgentTask) -> str:
    return _env().get_template(_user_template(task)).render(_context(task)).strip()


def render_repair(task: AgentTask, error: str, *, shorter: bool = False) -> str:
    return _env().get_template("repair.j2").render(_context(task), error=error, shorter=shorter).strip()


def build_messages(task: AgentTask) -> list[BaseMessage]:
    """The opening messages of an exchange: system prompt and the stage/focus prompt."""
    return [SystemMessage(content=render_system(task)), HumanMessage(content=render_user(task))]


def build_repair_message(task: AgentTask, error: str, *, shorter: bool = False) -> HumanMessage:
    """The follow-up to an unusable answer; ``shorter`` when it was cut off at the token limit."""
    return HumanMessage(content=render_repair(task, error, shorter=shorter))


def render_prompt_text(task: AgentTask) -> str:
    """Exactly what the model is sent, as one text (for ``egg prompt``)."""
    return f"=== system ===\n{render_system(task)}\n\n=== user ===\n{render_user(task)}\n"
