"""Loading one pack from disk, with one-line errors.

A pack is a directory holding ``pack.yaml`` (plus template files it names), or a single ``.yaml``
file (template paths are then relative to the file's directory). Anything wrong becomes an
:class:`~egg.errors.EggInputError` whose message names the file, the principle id (or template /
tuning space name) and the field, on one line, e.g.::

    my-pack/pack.yaml: principle my-pack/fuse-all: stage: input should be 'algorithm_design' or
    'hardware_tuning' (got 'design')

Combining packs (override by id, versions) is :mod:`principles.packset`; finding them is
:mod:`principles.discovery`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import structlog
import yaml
from pydantic import BaseModel, ValidationError

from egg.errors import EggInputError
from principles.decisions import KernelTemplate, check_kernel_template_source
from principles.schema import Pack, Template
from principles.templates import check_template_source

log = structlog.get_logger(__name__)

PACK_FILE = "pack.yaml"
Origin = Literal["builtin", "entry_point", "path"]

# Error types whose message we wrote ourselves and which already quote the offending value.
_OWN_ERRORS = {
    "kebab", "empty", "principle_id", "focus_stage", "repeat", "identifier", "param_type",
    "template_path", "duplicate", "constraint", "tuning_target", "semver", "target", "pack_item",
    "family", "range", "edit", "variant",
}
_LABELS = {"principles": "principle", "templates": "template", "tuning_spaces": "tuning space",
           "constants": "constant", "kernel_templates": "kernel template", "devices": "device"}


class LoadedPack(BaseModel):
    """A validated pack and where it came from."""

    pack: Pack
    source: Path  # the YAML file
    origin: Origin = "path"

    @property
    def root(self) -> Path:
        """Directory template paths are relative to."""
        return self.source.parent

    @property
    def name(self) -> str:
        return self.pack.name

    def template_path(self, template: Template) -> Path:
        return self.root / template.path

    def kernel_template_path(self, template: KernelTemplate) -> Path:
        return self.root / template.module


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML keeps the last silently)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    keys: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        keys.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def pack_file(path: str | Path) -> Path:
    """The YAML file of the pack at ``path`` (a directory with pack.yaml, or a .yaml/.yml file)."""
    path = Path(path)
    if path.is_dir():
        for name in (PACK_FILE, "pack.yml"):
            if (path / name).is_file():
                return path / name
        raise EggInputError(f"{path}: not a principle pack (no {PACK_FILE} in this directory)")
    if path.is_file():
        if path.suffix not in (".yaml", ".yml"):
            raise EggInputError(f"{path}: not a principle pack (expected a directory or a .yaml file)")
        return path
    raise EggInputError(f"{path}: no such principle pack (expected a directory or a .yaml file)")


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors become one line naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EggInputError(f"{path}: cannot read: {exc}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise EggInputError(f"{where}: bad YAML: {problem}") from None


def _item_label(section: str, raw: Any, index: int) -> str:
    item = raw.get(section)[index] if isinstance(raw.get(section), list) else None
    key = {"principles": "id", "devices": "match"}.get(section, "name")
    name = item.get(key) if isinstance(item, dict) else None
    return f"{_LABELS[section]} {name}" if isinstance(name, str) else f"{_LABELS[section]} #{index + 1}"


def _field_path(loc: tuple[Any, ...], node: Any) -> str:
    """Render a pydantic location below an item, naming list entries by their 'name' key."""
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            node = node[part]
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1:] = [f"{parts[-1] if parts else ''}[{name if name is not None else part}]"]
        else:
            node = node.get(part) if isinstance(node, dict) else None
            parts.append(str(part))
    return ".".join(parts)


def describe_validation_error(path: Path, raw: Any, exc: ValidationError) -> str:
    """One line: '<file>: <principle id | template name | pack>: <field>: <message>'."""
    errors = exc.errors()
    err = errors[0]
    loc = tuple(err["loc"])
    if err["type"] == "missing":
        message = "missing (required)"
    elif err["type"] == "extra_forbidden":
        message = "unknown field"
    else:
        message = err["msg"][:1].lower() + err["msg"][1:]
        message = message.removeprefix("value error, ")
        value = err.get("input")
        if err["type"] not in _OWN_ERRORS and isinstance(value, (str, int, float, bool)):
            message += f" (got {value!r})"
    if len(errors) > 1:
        message += f" (+{len(errors) - 1} more)"
    if len(loc) >= 2 and loc[0] in _LABELS and isinstance(loc[1], int):
        label = _item_label(loc[0], raw, loc[1])
        item = raw[loc[0]][loc[1]]
        field = _field_path(loc[2:], item)
        return f"{path}: {label}: {field}: {message}" if field else f"{path}: {label}: {message}"
    if loc:
        return f"{path}: pack: {_field_path(loc, raw)}: {message}"
    return f"{path}: {message}"  # a whole-pack check; its message names the item and field


def load_pack(path: str | Path, origin: Origin = "path") -> LoadedPack:
    """Load and validate one pack (schema, template files); raise EggInputError on any problem."""
    source = pack_file(path)
    raw = read_yaml(source)
    if not isinstance(raw, dict):
        raise EggInputError(
            f"{source}: expected a mapping with name, version, description and principles, "
            f"got {type(raw).__name__}"
        )
    try:
        pack = Pack.model_validate(raw)
    except ValidationError as exc:
        raise EggInputError(describe_validation_error(source, raw, exc)) from None
    loaded = LoadedPack(pack=pack, source=source, origin=origin)
    for template in pack.templates:
        problem = check_template_source(loaded.template_path(template), template)
        if problem:
            raise EggInputError(f"{source}: template {template.name}: {problem}")
    for kernel_template in pack.kernel_templates:
        problem = check_kernel_template_source(loaded.kernel_template_path(kernel_template), kernel_template)
        if problem:
            raise EggInputError(f"{source}: kernel template {kernel_template.name}: {problem}")
    log.debug("principles.pack_loaded", pack=pack.name, version=pack.version, source=str(source),
              origin=origin, principles=len(pack.principles))
    return loaded
