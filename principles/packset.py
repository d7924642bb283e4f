"""A set of loaded packs, combined in order: later packs override earlier ones.

Order is built-ins, then entry-point packs, then ``--principles PATH`` packs in the order given
(see :mod:`principles.discovery`). Two override rules:

* a pack with the same ``name`` as an earlier one replaces it wholesale (a newer copy of a pack);
* a principle with the same ``id`` as an earlier one replaces it (a user's house rule), and
  the replacement is recorded, so a report can say which advice the agents actually saw.

:meth:`PackSet.versions` is what a run report records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import structlog
from pydantic import BaseModel

from egg.device import GpuSpec
from egg.errors import EggInputError
from principles.decisions import Constant, KernelTemplate
from principles.loader import LoadedPack, Origin
from principles.schema import Principle, Template, TuningSpace, split_ref

log = structlog.get_logger(__name__)


class PackVersion(BaseModel):
    """What a report records about one pack that was in use."""

    name: str
    version: str
    origin: Origin
    source: str
    principles: int  # principles of this pack that are in effect (not overridden by a later pack)
    overrides: list[str] = []  # ids of earlier packs' principles this pack replaced


@dataclass(frozen=True)
class Entry:
    """A principle in effect, with the pack that supplied it and its place in load order."""

    principle: Principle
    pack: LoadedPack
    rank: int  # index of the pack in load order: higher = loaded later = user's choice
    position: int  # index inside its pack


class PackSet:
    """Packs in load order with principles, templates and tuning spaces indexed by id."""

    def __init__(self, packs: Iterable[LoadedPack] = ()) -> None:
        by_name: dict[str, LoadedPack] = {}
        for loaded in packs:
            if loaded.name in by_name:
                old = by_name.pop(loaded.name)
                log.info("principles.pack_replaced", pack=loaded.name, old=old.pack.version,
                         new=loaded.pack.version, source=str(loaded.source))
            by_name[loaded.name] = loaded  # re-inserted at the end: it is now the latest
        self.packs: list[LoadedPack] = list(by_name.values())
        self._entries: dict[str, Entry] = {}
        self._overrides: dict[str, tuple[str, str]] = {}  # id -> (replaced pack, replacing pack)
        self._templates: dict[str, tuple[Template, LoadedPack]] = {}
        self._constants: dict[str, tuple[Constant, LoadedPack]] = {}
        self._kernel_templates: dict[str, tuple[KernelTemplate, LoadedPack]] = {}
        for rank, loaded in enumerate(self.packs):
            for position, principle in enumerate(loaded.pack.principles):
                previous = self._entries.get(principle.id)
                if previous is not None:
                    self._overrides[principle.id] = (previous.pack.name, loaded.name)
                    log.info("principles.override", id=principle.id, old=previous.pack.name, new=loaded.name)
                elif principle.override:
                    log.warning("principles.override_target_missing", id=principle.id, pack=loaded.name)
                self._entries[principle.id] = Entry(principle, loaded, rank, position)
            for template in loaded.pack.templates:
                self._templates[f"{loaded.name}/{template.name}"] = (template, loaded)
            for constant in loaded.pack.constants:
                self._constants[f"{loaded.name}/{constant.name}"] = (constant, loaded)
            for kernel_template in loaded.pack.kernel_templates:
                self._kernel_templates[f"{loaded.name}/{kernel_template.name}"] = (kernel_template, loaded)
        self._check_references()
        self._check_decisions()

    def _check_references(self) -> None:
        """Cross-pack template references must resolve among the loaded packs."""
        for loaded in self.packs:
            for principle in loaded.pack.principles:
                if principle.template and principle.template not in self._templates:
                    raise EggInputError(
                        f"{loaded.source}: principle {principle.id}: template: "
                        f"no template {principle.template!r} in the loaded packs"
                    )
            for space in loaded.pack.tuning_spaces:
                where = f"{loaded.source}: tuning space {space.name}"
                if space.principle and space.principle not in self._entries:
                    raise EggInputError(f"{where}: principle: no principle {space.principle!r} in the loaded packs")
                if not space.template:
                    continue
                if space.template not in self._templates:
                    raise EggInputError(f"{where}: template: no template {space.template!r} in the loaded packs")
                template = self._templates[space.template][0]
                for param in space.parameters:
                    if template.parameter(param) is None:
                        raise EggInputError(
                            f"{where}: parameters.{param}: is not a documented parameter of template "
                            f"{space.template!r}"
                        )

    def _check_decisions(self) -> None:
        """References of decisions to other packs' constants and kernel templates must resolve."""
        for ref, (constant, loaded) in self._constants.items():
            if constant.principle and constant.principle not in self._entries:
                raise EggInputError(f"{loaded.source}: constant {constant.name}: principle: no principle "
                                    f"{constant.principle!r} in the loaded packs")
        for loaded in self.packs:
            for principle in loaded.pack.principles:
                for index, decision in enumerate(principle.decisions):
                    where = f"{loaded.source}: principle {principle.id}: decisions[{index}]"
                    for ref, value in decision.constants.items():
                        if ref not in self._constants:
                            known = ", ".join(sorted(self._constants)) or "none"
                            raise EggInputError(f"{where}.constants.{ref}: no constant {ref!r} in the loaded "
                                                f"packs (constants: {known})")
                        problem = self._constants[ref][0].problem(value)
                        if problem:
                            raise EggInputError(f"{where}.constants.{ref}: {problem}")
                    for ref in decision.kernel_templates:
                        if ref not in self._kernel_templates:
                            raise EggInputError(f"{where}.kernel_templates: no kernel template {ref!r} in the "
                                                "loaded packs")
                    for template in decision.tuning:
                        if split_ref(template)[0] is not None and template not in self._kernel_templates:
                            raise EggInputError(f"{where}.tuning.{template}: no kernel template {template!r} in "
                                                "the loaded packs (built-in templates are named without a '/')")

    # principles -----------------------------------------------------------------------------
    def entries(self) -> list[Entry]:
        """Principles in effect, in load order (pack, then position in the pack)."""
        return sorted(self._entries.values(), key=lambda e: (e.rank, e.position))

    def principles(self) -> list[Principle]:
        return [e.principle for e in self.entries()]

    def __iter__(self) -> Iterator[Principle]:
        return iter(self.principles())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, principle_id: str) -> Principle | None:
        entry = self._entries.get(principle_id)
        return entry.principle if entry else None

    def entry(self, principle_id: str) -> Entry:
        entry = self._entries.get(principle_id)
        if entry is None:
            close = [i for i in sorted(self._entries) if principle_id.split("/")[-1] in i][:3]
            hint = f" (did you mean {', '.join(close)}?)" if close else " (see 'egg principles list')"
            raise EggInputError(f"unknown principle id {principle_id!r}{hint}")
        return entry

    def find(self, principle_id: str) -> Principle:
        """The principle in effect for ``principle_id``; EggInputError if no pack defines it."""
        return self.entry(principle_id).principle

    def owner(self, principle_id: str) -> LoadedPack:
        return self.entry(principle_id).pack

    def overrides(self) -> dict[str, tuple[str, str]]:
        """``id -> (pack whose principle was replaced, pack that replaced it)``."""
        return dict(self._overrides)

    # templates and tuning spaces ------------------------------------------------------------
    def template(self, ref: str) -> tuple[Template, Path]:
        """A template by qualified reference ``'<pack>/<name>'`` and the absolute path of its file."""
        found = self._templates.get(ref)
        if found is None:
            raise EggInputError(f"unknown template {ref!r} (templates: {', '.join(sorted(self._templates))})")
        template, loaded = found
        return template, loaded.template_path(template).resolve()

    def templates(self) -> dict[str, Template]:
        return {ref: t for ref, (t, _) in sorted(self._templates.items())}

    def tuning_spaces(self, target: str | None = None) -> list[TuningSpace]:
        """Tuning spaces (of every pack), optionally only those for one template ref or principle id."""
        spaces = [s for loaded in self.packs for s in loaded.pack.tuning_spaces]
        return [s for s in spaces if target is None or s.target == target]

    # decisions' declarations -----------------------------------------------------------------
    def constants(self) -> dict[str, Constant]:
        """Declared constants by qualified name ``'<pack>/<name>'``."""
        return {ref: c for ref, (c, _) in sorted(self._constants.items())}

    def constant_pack(self, ref: str) -> str:
        return self._constants[ref][1].name

    def kernel_template(self, ref: str) -> tuple[KernelTemplate, Path]:
        """A user kernel template by ``'<pack>/<name>'`` and the absolute path of its module."""
        found = self._kernel_templates.get(ref)
        if found is None:
            known = ", ".join(sorted(self._kernel_templates)) or "none"
            raise EggInputError(f"unknown kernel template {ref!r} (kernel templates: {known})")
        template, loaded = found
        return template, loaded.kernel_template_path(template).resolve()

    def kernel_template_source(self, ref: str) -> Path:
        """The pack file that declares a kernel template (for error messages)."""
        return self._kernel_templates[ref][1].source

    def kernel_templates(self) -> dict[str, KernelTemplate]:
        return {ref: t for ref, (t, _) in sorted(self._kernel_templates.items())}

    def devices(self) -> list[GpuSpec]:
        """Device-table rows the packs give, the latest-loaded pack's first (they win)."""
        return [spec for loaded in reversed(self.packs) for spec in loaded.pack.devices]

    # report ----------------------------------------------------------------------------------
    def versions(self) -> list[PackVersion]:
        """Packs in use, in load order, with how many of their principles are in effect."""
        out = []
        for loaded in self.packs:
            in_effect = sum(1 for e in self._entries.values() if e.pack is loaded)
            replaced = sorted(i for i, (_, new) in self._overrides.items() if new == loaded.name)
            out.append(PackVersion(name=loaded.name, version=loaded.pack.version, origin=loaded.origin,
                                   source=str(loaded.source), principles=in_effect, overrides=replaced))
        return out
