"""Invalid packs give one-line errors naming the file, the principle id and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.errors import EggInputError
from principles import load_pack

TEMPLATE_SOURCE = '''"""A tiny template.

Parameters: BLOCK (int) is the block size.
"""


def launch(x, *, BLOCK=128):
    return x
'''


def _error(path: Path) -> str:
    with pytest.raises(EggInputError) as info:
        load_pack(path)
    message = str(info.value)
    assert "\n" not in message
    assert "Traceback" not in message
    return message


def _assert_names(message: str, path: Path, *parts: str) -> None:
    assert str(path) in message
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def test_good_pack_loads_as_dir_and_as_file(pack_data, write_pack) -> None:
    for as_dir in (True, False):
        loaded = load_pack(write_pack(pack_data, as_dir=as_dir, name=f"p{as_dir}"))
        assert loaded.pack.name == "test-pack"
        assert [p.id for p in loaded.pack.principles] == ["test-pack/first-rule", "test-pack/second-rule"]


@pytest.mark.parametrize("field", ["stage", "focus", "applies_to", "text", "id"])
def test_missing_principle_field(pack_data, write_pack, field) -> None:
    del pack_data["principles"][0][field]
    path = write_pack(pack_data)
    message = _error(path)
    who = "principle #1" if field == "id" else "principle test-pack/first-rule"
    _assert_names(message, path / "pack.yaml", who, f"{field}: missing")


@pytest.mark.parametrize("field", ["name", "version", "description", "principles"])
def test_missing_pack_field(pack_data, write_pack, field) -> None:
    del pack_data[field]
    path = write_pack(pack_data, name="x")
    _assert_names(_error(path), path / "pack.yaml", f"pack: {field}: missing")


def test_unknown_stage(pack_data, write_pack) -> None:
    pack_data["principles"][1]["stage"] = "design"
    path = write_pack(pack_data)
    message = _error(path)
    _assert_names(message, path, "principle test-pack/second-rule", "stage:", "'design'", "algorithm_design")


def test_focus_must_fit_stage(pack_data, write_pack) -> None:
    pack_data["principles"][1]["focus"] = "memory"  # stage is algorithm_design
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/second-rule", "focus:", "'memory'", "structure")


def test_unknown_op_class(pack_data, write_pack) -> None:
    pack_data["principles"][0]["applies_to"] = ["reduction", "gemm"]
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/first-rule", "applies_to", "'gemm'")


def test_unknown_bottleneck(pack_data, write_pack) -> None:
    pack_data["principles"][0]["bottleneck"] = "bandwidth"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/first-rule", "bottleneck:", "'bandwidth'")


def test_duplicate_id(pack_data, write_pack) -> None:
    pack_data["principles"][1]["id"] = "test-pack/first-rule"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/first-rule", "id:", "duplicate")


def test_id_of_another_pack_needs_override(pack_data, write_pack) -> None:
    pack_data["principles"][0]["id"] = "memory/coalesce-last-dim"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle memory/coalesce-last-dim", "id:", "override: true")
    pack_data["principles"][0]["override"] = True
    assert load_pack(write_pack(pack_data, name="ok")).pack.principles[0].override


def test_malformed_id(pack_data, write_pack) -> None:
    pack_data["principles"][0]["id"] = "test-pack/Bad_Slug"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/Bad_Slug", "id:", "kebab")


def test_unknown_key_is_rejected(pack_data, write_pack) -> None:
    pack_data["principles"][0]["stgae"] = "hardware_tuning"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/first-rule", "stgae: unknown field")


@pytest.mark.parametrize(("field", "value", "expect"), [
    ("name", "Hopper_Basics", "kebab-case"),
    ("version", 1.0, "semantic version"),
    ("version", "1.0", "semantic version"),
    ("targets", ["hopper"], "CUDA arch"),
])
def test_bad_pack_fields(pack_data, write_pack, field, value, expect) -> None:
    pack_data[field] = value
    path = write_pack(pack_data, name="x")
    _assert_names(_error(path), path, f"pack: {field}", expect)


@pytest.mark.parametrize("text", [
    "name: x\nversion: 0.1.0\n  description: [unclosed\n",
    "name: [x\n",
    "name: x\n\tversion: 0.1.0\n",
])
def test_bad_yaml(write_pack, text) -> None:
    path = write_pack(text, name="bad")
    message = _error(path)
    assert f"{path / 'pack.yaml'}:" in message and "bad YAML" in message


def test_duplicate_yaml_key(write_pack) -> None:
    text = "name: x\nname: y\nversion: 0.1.0\n"
    path = write_pack(text, name="dup")
    _assert_names(_error(path), path, "bad YAML", "duplicate key 'name'")


def test_top_level_not_a_mapping(write_pack) -> None:
    path = write_pack("- just\n- a list\n", name="lst")
    _assert_names(_error(path), path, "expected a mapping")


def test_not_a_pack(tmp_path) -> None:
    assert "no such principle pack" in _error(tmp_path / "missing")
    assert "no pack.yaml" in _error(tmp_path)
    (tmp_path / "notes.txt").write_text("hi")
    assert "expected a directory or a .yaml file" in _error(tmp_path / "notes.txt")


def _with_template(pack_data, **template):
    pack_data["templates"] = [{
        "name": "tiny", "path": "templates/tiny.py", "op_class": "elementwise", "entry": "launch",
        "description": "a tiny template",
        "parameters": [{"name": "BLOCK", "type": "int", "default": 128, "description": "block size"}],
        **template,
    }]
    pack_data["principles"][0]["template"] = "tiny"
    return pack_data


def test_template_ok_and_reference_is_qualified(pack_data, write_pack) -> None:
    path = write_pack(_with_template(pack_data), files={"templates/tiny.py": TEMPLATE_SOURCE})
    loaded = load_pack(path)
    assert loaded.pack.principles[0].template == "test-pack/tiny"
    assert loaded.template_path(loaded.pack.templates[0]).is_file()


def test_template_missing_file(pack_data, write_pack) -> None:
    path = write_pack(_with_template(pack_data))
    _assert_names(_error(path), path, "template tiny", "path:", "no such file")


def test_template_escaping_the_pack(pack_data, write_pack) -> None:
    path = write_pack(_with_template(pack_data, path="../evil.py"))
    _assert_names(_error(path), path, "template tiny", "path:", "inside the pack")


def test_template_parameter_not_in_launcher(pack_data, write_pack) -> None:
    data = _with_template(pack_data)
    data["templates"][0]["parameters"].append({"name": "num_warps", "type": "int", "description": "warps"})
    path = write_pack(data, files={"templates/tiny.py": TEMPLATE_SOURCE})
    _assert_names(_error(path), path, "template tiny", "parameters.num_warps", "not a parameter of launch()")


def test_template_default_of_wrong_type(pack_data, write_pack) -> None:
    data = _with_template(pack_data)
    data["templates"][0]["parameters"][0]["default"] = "big"
    path = write_pack(data, files={"templates/tiny.py": TEMPLATE_SOURCE})
    _assert_names(_error(path), path, "template tiny", "parameters[BLOCK]", "not of type int")


def test_principle_points_to_unknown_local_template(pack_data, write_pack) -> None:
    pack_data["principles"][0]["template"] = "nope"
    path = write_pack(pack_data)
    _assert_names(_error(path), path, "principle test-pack/first-rule", "template:", "no template 'nope'")


def test_tuning_space_errors(pack_data, write_pack) -> None:
    data = _with_template(pack_data)
    files = {"templates/tiny.py": TEMPLATE_SOURCE}
    data["tuning_spaces"] = [{"name": "tiny-space", "template": "tiny", "parameters": {"BLOCK": [64, 128]},
                              "constraints": ["BLOCK * 2 <= 256"]}]
    loaded = load_pack(write_pack(data, files=files, name="ok"))
    assert loaded.pack.tuning_spaces[0].configs() == [{"BLOCK": 64}, {"BLOCK": 128}]

    data["tuning_spaces"][0]["constraints"] = ["__import__('os').system('x')"]
    path = write_pack(data, files=files, name="call")
    _assert_names(_error(path), path, "tuning space tiny-space", "constraints", "not allowed")

    data["tuning_spaces"][0]["constraints"] = ["BLOCK_M <= 64"]
    path = write_pack(data, files=files, name="unknown-name")
    _assert_names(_error(path), path, "tuning space tiny-space", "unknown name 'BLOCK_M'")

    data["tuning_spaces"][0]["constraints"] = []
    data["tuning_spaces"][0]["parameters"] = {"BLOCK_SIZE": [64]}
    path = write_pack(data, files=files, name="undocumented")
    _assert_names(_error(path), path, "tuning space tiny-space", "parameters.BLOCK_SIZE", "not a documented")

    data["tuning_spaces"][0]["parameters"] = {"BLOCK": []}
    path = write_pack(data, files=files, name="empty")
    _assert_names(_error(path), path, "tuning space tiny-space", "no candidate values")

    data["tuning_spaces"][0] = {"name": "both", "template": "tiny", "principle": "test-pack/first-rule",
                                "parameters": {"BLOCK": [64]}}
    path = write_pack(data, files=files, name="both")
    _assert_names(_error(path), path, "tuning space both", "exactly one")


def test_only_the_first_error_is_spelled_out(pack_data, write_pack) -> None:
    pack_data["principles"][0]["stage"] = "bad"
    pack_data["principles"][1]["focus"] = "bad"
    message = _error(write_pack(pack_data))
    assert "(+1 more)" in message
