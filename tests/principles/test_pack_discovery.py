"""Discovery (built-ins, entry points, paths), override by id, versions for the report."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from egg.errors import EggInputError
from principles import ENTRY_POINT_GROUP, PackSet, entry_point_pack_paths, load_pack, load_packs
from principles.discovery import builtin_pack_paths


def _install_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module_source: str,
                          entries: dict[str, str]) -> str:
    """Make a fake installed distribution (dist-info + module) on sys.path; return the module name."""
    module = "egg_ep_" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:10]
    site = tmp_path / "site"
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{name} = {module}:{attr}" for name, attr in entries.items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (site / f"{module}.py").write_text(module_source)
    monkeypatch.syspath_prepend(str(site))
    return module


def _pack(name: str, *principles: dict) -> dict:
    return {"name": name, "version": "1.0.0", "description": f"pack {name}", "principles": list(principles)}


def _principle(pid: str, **extra) -> dict:
    base = {"id": pid, "stage": "hardware_tuning", "focus": "memory", "applies_to": ["reduction"],
            "text": f"Text of {pid}, which does not apply to matmuls."}
    return {**base, **extra}


def test_path_pack_is_discovered_after_builtins(write_pack, pack_data) -> None:
    path = write_pack(pack_data)
    packs = load_packs([path], entry_points=False)
    names = [v.name for v in packs.versions()]
    assert names[-1] == "test-pack"
    assert set(names[:-1]) == {p.name for p in builtin_pack_paths()}
    assert packs.find("test-pack/first-rule").text.startswith("Held-out advice")
    version = packs.versions()[-1]
    assert (version.origin, version.version, version.principles) == ("path", "0.1.0", 2)


def test_entry_point_packs_are_discovered(tmp_path, monkeypatch, write_pack) -> None:
    by_value = write_pack(_pack("ep-by-value", _principle("ep-by-value/rule")))
    by_call = write_pack(_pack("ep-by-call", _principle("ep-by-call/rule")), as_dir=False)
    source = (
        "from pathlib import Path\n"
        f"pack_path = Path({str(by_value)!r})\n"
        f"def get_path():\n    return {str(by_call)!r}\n"
    )
    _install_entry_points(tmp_path, monkeypatch, source, {"a-value": "pack_path", "b-call": "get_path"})
    assert entry_point_pack_paths() == [by_value, Path(by_call)]

    packs = load_packs()
    origins = {v.name: v.origin for v in packs.versions()}
    assert origins["ep-by-value"] == origins["ep-by-call"] == "entry_point"
    assert packs.owner("ep-by-call/rule").name == "ep-by-call"
    assert "ep-by-value" not in {v.name for v in load_packs(entry_points=False).versions()}


def test_broken_entry_point_is_a_one_line_error(tmp_path, monkeypatch) -> None:
    _install_entry_points(tmp_path, monkeypatch, "raise RuntimeError('boom')\n", {"broken": "pack_path"})
    with pytest.raises(EggInputError) as info:
        load_packs()
    message = str(info.value)
    assert "\n" not in message and "egg.principles:broken" in message and "boom" in message


def test_entry_point_of_wrong_type(tmp_path, monkeypatch) -> None:
    _install_entry_points(tmp_path, monkeypatch, "pack_path = 42\n", {"weird": "pack_path"})
    with pytest.raises(EggInputError, match="expected a path"):
        entry_point_pack_paths()


def test_user_pack_overriding_a_builtin_id_wins(write_pack) -> None:
    builtin = load_packs(entry_points=False).find("memory/eviction-hints")
    override = _principle("memory/eviction-hints", override=True, applies_to=["elementwise"],
                          text="House rule: always evict_first, never evict_last, whatever the data.")
    path = write_pack(_pack("house", override, _principle("house/extra")))
    packs = load_packs([path], entry_points=False)
    winner = packs.find("memory/eviction-hints")
    assert winner.text.startswith("House rule") and winner.text != builtin.text
    assert packs.owner("memory/eviction-hints").name == "house"
    assert packs.overrides() == {"memory/eviction-hints": ("memory", "house")}
    versions = {v.name: v for v in packs.versions()}
    assert versions["house"].overrides == ["memory/eviction-hints"]
    assert versions["memory"].principles == len(load_pack(
        [p for p in builtin_pack_paths() if p.name == "memory"][0]).pack.principles) - 1
    assert sum(1 for p in packs.principles() if p.id == "memory/eviction-hints") == 1


def test_later_path_pack_wins_over_earlier_path_pack(write_pack) -> None:
    first = write_pack(_pack("first", _principle("first/rule", text="First version of the rule, not final.")))
    second = write_pack(_pack("second", _principle("first/rule", override=True,
                                                   text="Second version of the rule, which wins.")))
    packs = load_packs([first, second], builtins=False, entry_points=False)
    assert packs.find("first/rule").text.startswith("Second")
    packs = load_packs([second, first], builtins=False, entry_points=False)
    assert packs.find("first/rule").text.startswith("First")


def test_same_pack_name_replaces_the_whole_pack(write_pack, tmp_path) -> None:
    old = write_pack(_pack("same", _principle("same/old-rule")), name="old")
    new_data = _pack("same", _principle("same/new-rule"))
    new_data["version"] = "2.0.0"
    new = write_pack(new_data, name="new")
    packs = load_packs([old, new], builtins=False, entry_points=False)
    assert [v.version for v in packs.versions()] == ["2.0.0"]
    assert packs.get("same/old-rule") is None and packs.get("same/new-rule") is not None


def test_override_of_unknown_id_is_kept(write_pack) -> None:
    path = write_pack(_pack("lonely", _principle("ghost/rule", override=True)))
    packs = load_packs([path], builtins=False, entry_points=False)
    assert packs.find("ghost/rule").id == "ghost/rule"
    assert packs.overrides() == {}


def test_cross_pack_template_reference(write_pack) -> None:
    ok = write_pack(_pack("uses-builtin", _principle("uses-builtin/rule",
                                                      template="algorithm-structure/row-softmax")))
    packs = load_packs([ok], entry_points=False)
    template, path = packs.template(packs.find("uses-builtin/rule").template)
    assert path.is_file() and f"def {template.entry}(" in path.read_text()

    with pytest.raises(EggInputError) as info:  # the built-ins are not loaded: the reference dangles
        load_packs([ok], builtins=False, entry_points=False)
    message = str(info.value)
    assert "principle uses-builtin/rule: template:" in message and "\n" not in message


def test_find_unknown_id_is_a_one_line_error() -> None:
    packs = PackSet([])
    with pytest.raises(EggInputError, match="unknown principle id 'x/y'"):
        packs.find("x/y")
