"""Machine-readable decisions: what a principle changes in the expert agents' search, as data.

Besides its text (for LLM prompts), a principle may carry ``decisions``: blocks keyed by what the
analysis found (``when``), each changing some of

* ``tuning``: the values a tuning agent tries, per template and parameter (``add``, ``remove``,
  ``replace``);
* ``variants``: structural variants switched on or off (``enabled``) or tried earlier or later
  (``priority``: higher first; 0 when unset);
* ``constants``: heuristic constants the expert reads (declared with a default in a pack's
  ``constants:`` section; a decision sets another value);
* ``kernel_templates``: user templates (Python modules a pack names in ``kernel_templates:``)
  that the expert should offer for these facts, under the same contract as its own.

A pack also declares ``constants`` and ``kernel_templates`` (and may add rows to the device table,
``devices``). :mod:`principles.decide` resolves all of it for one problem. Nothing here runs code:
a kernel template's module is parsed, never imported, when the pack loads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from egg import pyast
from egg.vocabulary import Bottleneck, OpClass

Scalar = int | float | bool | str
ParamType = Literal["int", "float", "bool", "str"]
DType = Literal[
    "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
    "int8", "uint8", "int16", "int32", "int64", "bool", "complex64",
]
_FAMILY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (float, int), "bool": (bool,), "str": (str,)}
# What a kernel template object must have: the expert's Template contract
# (agents/expert/templates: name, applies, tuning_space, default_config, render).
TEMPLATE_CONTRACT = ("applies", "tuning_space", "default_config", "render")


def _fail(kind: str, message: str) -> PydanticCustomError:
    """A validation error with a finished message (values already quoted; braces are safe)."""
    return PydanticCustomError(kind, "{message}", {"message": message})


def relative_py_path(value: str) -> str:
    """A pack's template module: a relative ``.py`` path that stays inside the pack."""
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts or p.suffix != ".py":
        raise _fail("template_path", f"{value!r} must be a relative .py path inside the pack")
    return value


def python_identifier(value: str) -> str:
    if not value.isidentifier():
        raise _fail("identifier", f"{value!r} is not a Python identifier")
    return value


def scalar_has_type(value: object, type_name: str) -> bool:
    """``value`` is of the declared type (a YAML ``true`` is not an int; an int is a float)."""
    return isinstance(value, _TYPES[type_name]) and (type_name == "bool" or not isinstance(value, bool))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SmRange(_Strict):
    """An inclusive range of SM counts; either end may be open."""

    min: int | None = Field(default=None, ge=1)
    max: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> SmRange:
        if self.min is None and self.max is None:
            raise _fail("empty", "give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise _fail("range", f"min {self.min} is above max {self.max}")
        return self

    def holds(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def text(self) -> str:
        return f"{self.min if self.min is not None else ''}..{self.max if self.max is not None else ''}"


class When(_Strict):
    """The facts a decision is for. Every condition given must hold; a list holds when the problem
    has one of its entries. No condition: always."""

    op_classes: list[OpClass] = Field(default_factory=list)
    bottleneck: list[Bottleneck] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list, description="pattern families: rms_norm, softmax, ...")
    dtypes: list[DType] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list, description="substrings of the device name: H200, A100")
    sm_count: SmRange | None = None

    @field_validator("bottleneck", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("patterns")
    @classmethod
    def _families(cls, value: list[str]) -> list[str]:
        for family in value:
            if not _FAMILY_RE.match(family):
                raise _fail("family", f"{family!r} is not a pattern family name (like 'rms_norm')")
        return value

    @field_validator("devices")
    @classmethod
    def _devices(cls, value: list[str]) -> list[str]:
        if any(not d.strip() for d in value):
            raise _fail("empty", "a device name must not be empty")
        return value


class ValueEdit(_Strict):
    """How a decision changes one parameter's candidate values: ``replace`` them, or ``add`` and/or
    ``remove`` some (added values come after the existing ones, in the order given)."""

    add: list[Scalar] = Field(default_factory=list)
    remove: list[Scalar] = Field(default_factory=list)
    replace: list[Scalar] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> ValueEdit:
        if self.replace is not None and (self.add or self.remove):
            raise _fail("edit", "'replace' sets the values outright: do not combine it with 'add' or 'remove'")
        if self.replace is None and not self.add and not self.remove:
            raise _fail("edit", "give 'add', 'remove' or 'replace'")
        for name in ("add", "remove", "replace"):
            values = getattr(self, name) or []
            if len(set(map(repr, values))) != len(values):
                raise _fail("duplicate", f"'{name}' repeats a value")
        return self


class VariantSwitch(_Strict):
    enabled: bool | None = None
    priority: int | None = Field(default=None, description="higher is tried first; unset counts as 0")

    @model_validator(mode="after")
    def _something(self) -> VariantSwitch:
        if self.enabled is None and self.priority is None:
            raise _fail("empty", "give 'enabled', 'priority' or both")
        return self


class Decision(_Strict):
    """One block of decisions of a principle, for the facts in ``when``."""

    when: When = Field(default_factory=When)
    tuning: dict[str, dict[str, ValueEdit]] = Field(
        default_factory=dict, description="template name -> parameter -> edit")
    variants: dict[str, VariantSwitch] = Field(default_factory=dict, description="variant id -> switch")
    constants: dict[str, Scalar] = Field(default_factory=dict, description="constant ('<pack>/<name>') -> value")
    kernel_templates: list[str] = Field(default_factory=list, description="kernel templates to offer")

    @field_validator("tuning")
    @classmethod
    def _tuning(cls, value: dict[str, dict[str, ValueEdit]]) -> dict[str, dict[str, ValueEdit]]:
        for template, params in value.items():
            if not params:
                raise _fail("empty", f"template {template!r} lists no parameter")
            for param in params:
                if not param.isidentifier():
                    raise _fail("identifier", f"{template}.{param}: {param!r} is not a parameter name")
        return value

    @field_validator("variants")
    @classmethod
    def _variant_ids(cls, value: dict[str, VariantSwitch]) -> dict[str, VariantSwitch]:
        for variant in value:
            if not re.match(r"^[a-z0-9][a-z0-9-]*$", variant):
                raise _fail("variant", f"{variant!r} is not a variant id (like 'less-fused')")
        return value

    @model_validator(mode="after")
    def _something(self) -> Decision:
        if not (self.tuning or self.variants or self.constants or self.kernel_templates):
            raise _fail("empty", "a decision must change something: tuning, variants, constants or kernel_templates")
        return self


class Constant(_Strict):
    """A named heuristic number the expert reads, with its default (decisions may set others)."""

    name: str
    type: ParamType
    default: Scalar
    description: str
    min: float | None = None
    max: float | None = None
    principle: str | None = Field(default=None, description="the principle whose advice the default encodes")

    @model_validator(mode="after")
    def _default(self) -> Constant:
        problem = self.problem(self.default)
        if problem:
            raise _fail("param_type", f"default: {problem}")
        return self

    def problem(self, value: object) -> str | None:
        """Why ``value`` cannot be this constant's value, or None."""
        if not scalar_has_type(value, self.type):
            return f"value {value!r} is not of type {self.type}"
        if self.type in ("int", "float"):
            number = float(value)  # type: ignore[arg-type]
            if self.min is not None and number < self.min:
                return f"value {value!r} is below the minimum {self.min:g}"
            if self.max is not None and number > self.max:
                return f"value {value!r} is above the maximum {self.max:g}"
        return None


class KernelTemplate(_Strict):
    """A user template: a Python module in the pack whose ``object`` follows the expert's Template
    contract (``name``, ``applies``, ``tuning_space``, ``default_config``, ``render``)."""

    name: str
    module: str = Field(description="relative to the pack directory, a .py file inside it")
    object: str = Field(default="TEMPLATE", description="the top-level name of the template object")
    description: str

    @field_validator("module")
    @classmethod
    def _module(cls, value: str) -> str:
        return relative_py_path(value)

    @field_validator("object")
    @classmethod
    def _object(cls, value: str) -> str:
        return python_identifier(value)


def check_kernel_template_source(path: Path, template: KernelTemplate) -> str | None:
    """A one-line problem with the module (``'<field>: <message>'``), or None. Parses only."""
    if not path.is_file():
        return f"module: no such file {path}"
    try:
        tree = pyast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        return f"module: {path}:{getattr(exc, 'lineno', None)}: cannot parse: {getattr(exc, 'msg', exc)}"
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == template.object:
            return None
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == template.object for t in targets):
            return None
    return f"object: no top-level {template.object!r} in {path.name}"
