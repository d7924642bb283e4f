"""Turn a model's answer into a candidate source, or one precise line saying what is wrong.

The error line is what the repair turn sends back to the model, so it names the exact problem
(the syntax error's line, the constructor parameters expected) rather than a generic "invalid".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pydantic import BaseModel, Field

from egg import pyast
from egg.errors import EggInputError
from egg.problem import class_init_params, parse_source
from egg.vocabulary import Backend

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_OPEN_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n", re.M)
_PY_TAGS = {"", "python", "py", "python3"}
_DEFINES_MODELNEW = re.compile(r"^class\s+ModelNew\b", re.M)
_PRINCIPLES = re.compile(r"^[\s*_#>-]*PRINCIPLES[\s*_]*:[\s*_]*(.*)$", re.M | re.I)
_STRUCTURE = re.compile(r"^[\s*_#>-]*STRUCTURE[\s*_]*:[\s*_]*(.*)$", re.M | re.I)

NO_CODE = "no code found: answer with one ```python block that defines class ModelNew"


class ParseResult(BaseModel):
    ok: bool
    source: str = ""
    error: str | None = None  # one line, sent back to the model in a repair turn
    principle_ids: list[str] = Field(default_factory=list)
    structure: str | None = None


def extract_code(answer: str) -> tuple[str | None, str | None]:
    """Return ``(code, error)``: the python block to use, or why there is none."""
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(answer)]
    python = [body for tag, body in blocks if tag in _PY_TAGS]
    if python:
        defining = [b for b in python if _DEFINES_MODELNEW.search(b)]
        # Models often show a snippet first and the full file last: prefer the last full one.
        return (defining or python)[-1], None
    stripped = _FENCE.sub("", answer)
    unterminated = _OPEN_FENCE.search(stripped)
    if unterminated and unterminated.group(1).lower() in _PY_TAGS:
        return None, "unterminated ```python block (answer cut off?): send the whole file again"
    if not blocks and _is_bare_code(answer):
        return answer, None
    return None, NO_CODE


def _is_bare_code(text: str) -> bool:
    try:
        tree = pyast.parse(text)
    except SyntaxError:
        return False
    # "Sure." parses as an expression; real code has at least one import, def or class.
    return any(
        isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) for n in tree.body
    )


def _decorator_names(node: ast.FunctionDef) -> list[str]:
    names = []
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        names.append(ast.unparse(target))
    return names


def _has_triton_kernel(tree: ast.Module) -> bool:
    jit_aliases = {"triton.jit"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "triton":
            jit_aliases |= {a.asname or a.name for a in node.names if a.name == "jit"}
    return any(
        isinstance(node, ast.FunctionDef) and set(_decorator_names(node)) & jit_aliases
        for node in ast.walk(tree)
    )


def _uses_load_inline(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "load_inline":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "load_inline":
            return True
    return False


def _signature(params: list[str]) -> str:
    return "(" + ", ".join(params) + ")" if params else "() (no parameters besides self)"


def validate_code(code: str, problem_source: str, backend: Backend) -> str | None:
    """Return None if ``code`` is a plausible candidate for the problem, else one error line."""
    try:
        tree = pyast.parse(code)
    except SyntaxError as exc:
        lines = code.splitlines()
        lineno = exc.lineno or 0
        text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        where = f"line {lineno}" + (f" `{text[:80]}`" if text else "")
        return f"syntax error at {where} of the code block: {exc.msg}"
    params = class_init_params(tree, "ModelNew")
    if params is None:
        return "no class ModelNew defined at top level: define class ModelNew(nn.Module)"
    try:
        expected = class_init_params(parse_source(Path("<problem>"), problem_source), "Model")
    except EggInputError:
        expected = None
    if expected is not None and params != expected:
        return (
            f"ModelNew.__init__ takes {_signature(params)} but Model.__init__ takes "
            f"{_signature(expected)}: use exactly the same parameters in the same order"
        )
    if backend is Backend.TRITON and not _has_triton_kernel(tree):
        return "no Triton kernel: define at least one @triton.jit function and launch it in forward"
    if backend is Backend.CUDA and not _uses_load_inline(tree):
        return (
            "no CUDA kernel: compile the CUDA source with torch.utils.cpp_extension.load_inline "
            "and call it in forward"
        )
    return None


def _outside_code(answer: str) -> str:
    return _FENCE.sub("", answer)


def parse_principle_ids(answer: str, known: list[str] | None = None) -> list[str]:
    """Ids from the last ``PRINCIPLES: a, b`` line outside code; unknown ids dropped if ``known``."""
    matches = _PRINCIPLES.findall(_outside_code(answer))
    if not matches:
        return []
    ids: list[str] = []
    for raw in re.split(r"[,\s]+", matches[-1]):
        token = raw.strip("`*[]()'\".;")
        if token and token.lower() != "none" and token not in ids:
            ids.append(token)
    if known is not None:
        ids = [i for i in ids if i in known]
    return ids


def parse_structure(answer: str) -> str | None:
    matches = _STRUCTURE.findall(_outside_code(answer))
    line = matches[-1].strip().strip("*_`") if matches else ""
    return line[:300] or None


def parse_answer(
    answer: str, problem_source: str, backend: Backend, known_principles: list[str] | None = None
) -> ParseResult:
    """Extract and validate the candidate in ``answer`` (see module docstring)."""
    code, error = extract_code(answer)
    if code is None:
        return ParseResult(ok=False, error=error)
    source = code.strip("\n") + "\n"
    error = validate_code(source, problem_source, backend)
    return ParseResult(
        ok=error is None,
        source=source,
        error=error,
        principle_ids=parse_principle_ids(answer, known_principles),
        structure=parse_structure(answer),
    )
