"""The built-in packs are valid, cover the four focuses, and follow the writing rules."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from egg.vocabulary import STAGE_FOCUSES, Focus
from principles import builtin_pack_paths, load_pack, load_packs
from principles.discovery import BUILTIN_DIR

BUILTIN_PATHS = builtin_pack_paths()


def test_expected_builtin_packs_exist() -> None:
    names = {p.name for p in BUILTIN_PATHS}
    assert {"algorithm-structure", "parallel-mapping", "tiling", "memory", "hopper-h200"} <= names


@pytest.mark.parametrize("path", BUILTIN_PATHS, ids=lambda p: p.name)
def test_every_builtin_pack_validates(path) -> None:
    loaded = load_pack(path, origin="builtin")
    assert loaded.pack.name == path.name  # directory name = pack name, so paths are predictable
    for principle in loaded.pack.principles:
        assert principle.focus in STAGE_FOCUSES[principle.stage]


def test_builtins_combine_without_errors_and_cover_all_focuses() -> None:
    packs = load_packs(entry_points=False)
    principles = packs.principles()
    assert len(principles) >= 40
    focuses = Counter(p.focus for p in principles)
    for focus in Focus:
        assert focuses[focus] >= 5, f"too few {focus.value} principles"
    assert not packs.overrides()  # built-ins never shadow each other


def test_principle_texts_say_when_they_do_not_apply() -> None:
    # Each principle must give the limits of its advice, not only the advice.
    markers = ("not", "hurt", "unless", "only", "instead", "avoid", "never", "irrelevant", "reverses", "fails",
               "beware", "rather", "exception", "nothing", "rarely", "wrong")
    for principle in load_packs(entry_points=False).principles():
        text = principle.text.lower()
        assert len(text) >= 200, principle.id
        assert any(m in text for m in markers), principle.id


def test_every_template_is_referenced_and_documented() -> None:
    packs = load_packs(entry_points=False)
    referenced = {p.template for p in packs.principles() if p.template}
    templates = packs.templates()
    assert len(templates) >= 7
    for ref, template in templates.items():
        assert ref in referenced, f"no principle points to template {ref}"
        _, path = packs.template(ref)
        tree = ast.parse(path.read_text())
        doc = ast.get_docstring(tree) or ""
        assert doc.startswith("Reference kernel:") and "Generated, do not edit" in doc
        assert f"def {template.entry}(" in path.read_text()
        assert path.is_relative_to(BUILTIN_DIR)


def test_tuning_spaces_have_valid_configs() -> None:
    packs = load_packs(entry_points=False)
    spaces = packs.tuning_spaces()
    # the values a tuner tries are the expert templates' own spaces (edited by decisions): no
    # built-in space describes a reference template's parameters a second time
    assert spaces and not [s.name for s in spaces if s.template]
    for space in spaces:
        configs = space.configs()
        assert configs, space.name
        template = packs.template(space.template)[0] if space.template else None
        for config in configs[:5]:
            if template is not None:
                for name, value in config.items():
                    param = template.parameter(name)
                    assert param is not None and (param.choices is None or value in param.choices)
