"""The principle-pack format, as pydantic models.

A pack is what an expert knows, as data: principles (short texts an agent reads), reference
templates (Triton files an expert agent renders) and tuning spaces (what the hardware-tuning
stage searches). ``principles/README.md`` documents the YAML; this module is the authority.

Identity rules (decided here, documented in the README):

* pack ``name`` is kebab-case (``hopper-basics``) and unique in a run; a later pack with the same
  name replaces the earlier one wholesale;
* a principle ``id`` is ``<pack-name>/<slug>`` with a kebab-case slug. A principle whose prefix is
  *another* pack's name replaces that pack's principle with the same id, and must say so with
  ``override: true`` (so a typo cannot silently shadow somebody else's principle);
* a template or tuning space is named by a kebab-case slug inside its pack; references to it are
  ``<slug>`` (same pack) or ``<pack-name>/<slug>`` (any loaded pack). After validation every
  reference is stored qualified, so a principle keeps pointing at the right file after overrides.

Every model forbids unknown keys: a misspelt field in a user's pack is an error, not a silent no-op.
"""

from __future__ import annotations

import itertools
import keyword
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from egg.device import GpuSpec
from egg.vocabulary import STAGE_FOCUSES, Bottleneck, Focus, OpClass, Stage
from principles.constraints import ConstraintError, evaluate_constraint, parse_constraint
from principles.decisions import Constant, Decision, KernelTemplate, ParamType, python_identifier, relative_py_path

KEBAB = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
_KEBAB_RE = re.compile(rf"^{KEBAB}$")
_ID_RE = re.compile(rf"^({KEBAB})/([a-z0-9]+(?:-[a-z0-9]+)*)$")
# semver.org's grammar: MAJOR.MINOR.PATCH[-prerelease][+build]
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_TARGET_RE = re.compile(r"^sm_\d{2,3}[a-z]?$")

Scalar = int | float | bool | str
_PY_TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (float, int), "bool": (bool,), "str": (str,)}


def _kebab(value: str, what: str) -> str:
    if not _KEBAB_RE.match(value):
        raise _fail("kebab", f"{what} {value!r} is not kebab-case (like 'hopper-basics')")
    return value


def _one_line(value: str) -> str:
    value = " ".join(value.split())
    if not value:
        raise _fail("empty", "must not be empty")
    return value


def split_ref(ref: str) -> tuple[str | None, str]:
    """``'pack/slug'`` -> ``('pack', 'slug')``; ``'slug'`` -> ``(None, 'slug')``."""
    prefix, _, slug = ref.rpartition("/")
    return (prefix or None), slug


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Principle(_Strict):
    """One piece of expert advice, for one stage and focus, about some operator classes."""

    id: str = Field(description="'<pack-name>/<slug>', kebab-case")
    stage: Stage
    focus: Focus
    applies_to: list[OpClass] = Field(min_length=1, description="operator classes it is about")
    bottleneck: Bottleneck | None = None
    text: str = Field(description="the advice as an expert says it, with when it applies and when it hurts")
    template: str | None = Field(default=None, description="reference template: '<slug>' or '<pack>/<slug>'")
    override: bool = Field(default=False, description="replaces another pack's principle with this id")
    decisions: list[Decision] = Field(default_factory=list, description="machine-readable decisions, by facts")

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _ID_RE.match(value):
            raise _fail("principle_id", f"{value!r} is not '<pack-name>/<kebab-slug>'")
        return value

    @field_validator("focus")
    @classmethod
    def _focus_fits_stage(cls, value: Focus, info: ValidationInfo) -> Focus:
        stage = info.data.get("stage")  # absent when the stage itself was invalid
        if stage is not None and value not in STAGE_FOCUSES[stage]:
            allowed = " | ".join(f.value for f in STAGE_FOCUSES[stage])
            raise _fail("focus_stage", f"{value.value!r} is not a focus of stage {stage.value!r} (allowed: {allowed})")
        return value

    @field_validator("applies_to")
    @classmethod
    def _no_repeats(cls, value: list[OpClass]) -> list[OpClass]:
        if len(set(value)) != len(value):
            raise _fail("repeat", "lists an operator class twice")
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise _fail("empty", "must not be empty")
        return value.strip()

    @property
    def pack_prefix(self) -> str:
        return self.id.split("/", 1)[0]


class TemplateParameter(_Strict):
    """One documented parameter of a template's launcher function."""

    name: str
    type: ParamType
    default: Scalar | None = Field(default=None, description="None: the launcher picks from the shapes")
    constexpr: bool = Field(default=False, description="compile-time (tl.constexpr or launch option)")
    choices: list[Scalar] | None = None
    description: str

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier() or keyword.iskeyword(value):
            raise _fail("identifier", f"{value!r} is not a Python identifier")
        return value

    @model_validator(mode="after")
    def _default_has_type(self) -> TemplateParameter:
        types = _PY_TYPES[self.type]
        for value in ([self.default] if self.default is not None else []) + list(self.choices or []):
            # bool is an int in Python; a YAML 'true' for an int parameter is still a mistake
            if not isinstance(value, types) or (self.type != "bool" and isinstance(value, bool)):
                raise _fail("param_type", f"value {value!r} is not of type {self.type}")
        return self


class Template(_Strict):
    """A reference kernel: a Triton source file in the pack with a documented launcher."""

    name: str
    path: str = Field(description="relative to the pack directory, a .py file inside it")
    op_class: OpClass
    entry: str = Field(description="the launcher function in the file")
    description: str
    parameters: list[TemplateParameter] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name_kebab(cls, value: str) -> str:
        return _kebab(value, "template name")

    @field_validator("description")
    @classmethod
    def _description_one_line(cls, value: str) -> str:
        return _one_line(value)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return relative_py_path(value)

    @field_validator("entry")
    @classmethod
    def _entry(cls, value: str) -> str:
        return python_identifier(value)

    @field_validator("parameters")
    @classmethod
    def _unique_params(cls, value: list[TemplateParameter]) -> list[TemplateParameter]:
        names = [p.name for p in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise _fail("duplicate", f"parameter {dupes[0]!r} is documented twice")
        return value

    def parameter(self, name: str) -> TemplateParameter | None:
        return next((p for p in self.parameters if p.name == name), None)


class TuningSpace(_Strict):
    """Candidate values for the hardware-tuning stage, for one template or one principle."""

    name: str
    template: str | None = None
    principle: str | None = None
    description: str | None = None
    parameters: dict[str, list[Scalar]] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name_kebab(cls, value: str) -> str:
        return _kebab(value, "tuning space name")

    @field_validator("parameters")
    @classmethod
    def _candidates(cls, value: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        for name, candidates in value.items():
            if not candidates:
                raise _fail("empty", f"parameter {name!r} has no candidate values")
            if len(set(map(repr, candidates))) != len(candidates):
                raise _fail("duplicate", f"parameter {name!r} repeats a candidate")
        return value

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, value: list[str], info: ValidationInfo) -> list[str]:
        names = set(info.data.get("parameters") or {})
        for expression in value:
            try:
                parse_constraint(expression, names)
            except ConstraintError as exc:
                raise _fail("constraint", str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_target(self) -> TuningSpace:
        if (self.template is None) == (self.principle is None):
            raise _fail("tuning_target", "set exactly one of 'template' or 'principle'")
        return self

    @property
    def target(self) -> str:
        return self.template or self.principle or ""

    def configs(self) -> list[dict[str, Scalar]]:
        """Every combination of candidates that satisfies all constraints, in declaration order."""
        names = list(self.parameters)
        out = []
        for values in itertools.product(*(self.parameters[n] for n in names)):
            config = dict(zip(names, values))
            if all(evaluate_constraint(c, config) for c in self.constraints):
                out.append(config)
        return out


class Pack(_Strict):
    """A versioned, pluggable unit of expert knowledge (one ``pack.yaml`` or one ``.yaml`` file)."""

    name: str
    version: str
    description: str
    targets: list[str] = Field(default_factory=list, description="hardware, e.g. sm_90; empty: any GPU")
    principles: list[Principle] = Field(min_length=1)
    templates: list[Template] = Field(default_factory=list)
    tuning_spaces: list[TuningSpace] = Field(default_factory=list)
    constants: list[Constant] = Field(default_factory=list, description="heuristic constants with defaults")
    kernel_templates: list[KernelTemplate] = Field(default_factory=list, description="user templates")
    devices: list[GpuSpec] = Field(default_factory=list, description="rows for the known-GPU table")

    @field_validator("name")
    @classmethod
    def _name_kebab(cls, value: str) -> str:
        return _kebab(value, "pack name")

    @field_validator("description")
    @classmethod
    def _description_one_line(cls, value: str) -> str:
        return _one_line(value)

    @field_validator("version", mode="before")
    @classmethod
    def _semver(cls, value: Any) -> Any:
        if not isinstance(value, str) or not _SEMVER_RE.match(value):
            raise _fail("semver", f"{value!r} is not a semantic version like '0.1.0' (quote it in YAML)")
        return value

    @field_validator("targets")
    @classmethod
    def _targets(cls, value: list[str]) -> list[str]:
        for target in value:
            if not _TARGET_RE.match(target):
                raise _fail("target", f"{target!r} is not a CUDA arch like 'sm_90'")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> Pack:
        """Checks that need the whole pack. Errors carry the principle/template so the loader can name it."""
        seen: set[str] = set()
        for principle in self.principles:
            if principle.id in seen:
                raise _item_error("principles", principle.id, "id", "duplicate id in this pack")
            seen.add(principle.id)
            if principle.pack_prefix != self.name and not principle.override:
                raise _item_error(
                    "principles", principle.id, "id",
                    f"must start with '{self.name}/' (or set 'override: true' to replace another pack's principle)",
                )
            if principle.template:
                principle.template = self._qualify(principle.template, "principles", principle.id)
        names = [t.name for t in self.templates]
        for template in self.templates:
            if names.count(template.name) > 1:
                raise _item_error("templates", template.name, "name", "duplicate template name in this pack")
        spaces = [s.name for s in self.tuning_spaces]
        for space in self.tuning_spaces:
            if spaces.count(space.name) > 1:
                raise _item_error("tuning_spaces", space.name, "name", "duplicate tuning space name in this pack")
            if space.template:
                space.template = self._qualify(space.template, "tuning_spaces", space.name)
                local = self.local_template(space.template)
                for param in space.parameters:
                    if local is not None and local.parameter(param) is None:
                        raise _item_error("tuning_spaces", space.name, f"parameters.{param}",
                                          f"is not a documented parameter of template {local.name!r}")
        self._check_declarations()
        for principle in self.principles:
            for index, decision in enumerate(principle.decisions):
                self._qualify_decision(principle.id, index, decision)
        return self

    def _check_declarations(self) -> None:
        for section, items in (("constants", self.constants), ("kernel_templates", self.kernel_templates)):
            names = [item.name for item in items]
            for item in items:
                if not _KEBAB_RE.match(item.name):
                    raise _item_error(section, item.name, "name", f"{item.name!r} is not kebab-case")
                if names.count(item.name) > 1:
                    raise _item_error(section, item.name, "name", "declared twice in this pack")
        for constant in self.constants:
            if constant.principle and "/" not in constant.principle:
                constant.principle = f"{self.name}/{constant.principle}"
        matches = [d.match.lower() for d in self.devices]
        for device in self.devices:
            if matches.count(device.match.lower()) > 1:
                raise _item_error("devices", device.match, "match", "two rows match the same name")

    def _qualify_decision(self, principle_id: str, index: int, decision: Decision) -> None:
        """Local references become '<pack>/<name>'; local ones must exist (others: PackSet)."""
        where = f"decisions[{index}]"
        constants = {}
        for ref, value in decision.constants.items():
            prefix, slug = split_ref(ref)
            if prefix in (None, self.name):
                local = next((c for c in self.constants if c.name == slug), None)
                if local is None:
                    raise _item_error("principles", principle_id, f"{where}.constants.{ref}",
                                      f"no constant {slug!r} declared in pack {self.name!r}")
                if (problem := local.problem(value)) is not None:
                    raise _item_error("principles", principle_id, f"{where}.constants.{ref}", problem)
            constants[f"{self.name}/{slug}" if prefix is None else ref] = value
        decision.constants = constants
        refs = []
        for ref in decision.kernel_templates:
            prefix, slug = split_ref(ref)
            if prefix in (None, self.name) and slug not in {t.name for t in self.kernel_templates}:
                raise _item_error("principles", principle_id, f"{where}.kernel_templates",
                                  f"no kernel template {slug!r} in pack {self.name!r}")
            refs.append(f"{self.name}/{slug}" if prefix is None else ref)
        decision.kernel_templates = refs
        for template in decision.tuning:
            prefix, slug = split_ref(template)
            if prefix == self.name and slug not in {t.name for t in self.kernel_templates}:
                raise _item_error("principles", principle_id, f"{where}.tuning.{template}",
                                  f"no kernel template {slug!r} in pack {self.name!r}")

    def _qualify(self, ref: str, section: str, item: str) -> str:
        prefix, slug = split_ref(ref)
        if prefix is None:
            if slug not in {t.name for t in self.templates}:
                raise _item_error(section, item, "template", f"no template {slug!r} in pack {self.name!r}")
            return f"{self.name}/{slug}"
        return ref  # another pack's template: checked when the packs are combined (PackSet)

    def local_template(self, ref: str) -> Template | None:
        prefix, slug = split_ref(ref)
        if prefix not in (None, self.name):
            return None
        return next((t for t in self.templates if t.name == slug), None)


def _fail(kind: str, message: str) -> PydanticCustomError:
    """A validation error with a finished message (values already quoted; braces are safe)."""
    return PydanticCustomError(kind, "{message}", {"message": message})


def _item_error(section: str, item: str, field: str, message: str) -> PydanticCustomError:
    # The message reads "principle <id>: <field>: <message>"; the loader prefixes the file.
    label = {"principles": "principle", "templates": "template", "tuning_spaces": "tuning space",
             "constants": "constant", "kernel_templates": "kernel template", "devices": "device"}[section]
    return _fail("pack_item", f"{label} {item}: {field}: {message}")
