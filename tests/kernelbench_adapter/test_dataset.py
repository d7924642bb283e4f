"""Finding problems and generations in a KernelBench-shaped folder; --ids specs."""

from __future__ import annotations

import pytest

from egg.errors import EggInputError
from kernelbench_adapter.dataset import find_generations, list_problems, parse_ids, select_problems


def test_problems_are_found_by_id_prefix_in_both_layouts(kb_root):
    problems = list_problems(kb_root, 1)
    assert [p.problem_id for p in problems] == [1, 2, 3, 4, 5]
    assert problems[0].name == "1_ReLU.py" and problems[0].stem == "1_ReLU"
    # ROOT/level{N} works too (a folder holding the levels directly)
    assert [p.problem_id for p in list_problems(kb_root / "KernelBench", 1)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("spec", "ids"),
    [("1-3,5", [1, 2, 3, 5]), (" 2 , 1-2 ", [1, 2]), ("7", [7]), ("3-3", [3])],
)
def test_parse_ids(spec, ids):
    assert parse_ids(spec) == ids


@pytest.mark.parametrize("spec", ["", "1-x", "3-1", "0", "1,,2", "a", "1-2-3", "-4"])
def test_bad_id_specs_are_one_line_errors(spec):
    with pytest.raises(EggInputError) as err:
        parse_ids(spec)
    assert "--ids" in str(err.value) and "\n" not in str(err.value)


def test_selection_and_limit(kb_root):
    problems = list_problems(kb_root, 1)
    assert [p.problem_id for p in select_problems(problems, "2-4")] == [2, 3, 4]
    assert [p.problem_id for p in select_problems(problems, None, limit=2)] == [1, 2]
    with pytest.raises(EggInputError, match="no level1 problem with id 9, 10"):
        select_problems(problems, "4,9-10")
    with pytest.raises(EggInputError, match="--limit"):
        select_problems(problems, None, limit=0)


def test_missing_root_level_and_duplicate_ids(tmp_path, kb_root):
    with pytest.raises(EggInputError, match="no such directory"):
        list_problems(tmp_path / "nope", 1)
    with pytest.raises(EggInputError, match="no level3 directory"):
        list_problems(kb_root, 3)
    (kb_root / "KernelBench" / "level1" / "1_Again.py").write_text("")
    with pytest.raises(EggInputError, match="problem id 1 is used by both"):
        list_problems(kb_root, 1)


def test_generations_of_one_level(generations):
    found = find_generations(generations, 1)
    assert sorted(found) == [1, 2, 3] and list(found[1]) == [0]
    with pytest.raises(EggInputError, match="no files named level_3_problem"):
        find_generations(generations, 3)
