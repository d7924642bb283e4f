"""Retrieval: filter by stage/focus/op class/target, most specific first, within a token budget."""

from __future__ import annotations

import pytest

from egg.errors import EggInputError
from egg.vocabulary import Focus, Stage
from principles import load_packs, principle_tokens, rank, render_principles, retrieve


def _p(pid: str, applies_to: list[str], *, focus: str = "memory", bottleneck: str | None = None,
       text: str | None = None) -> dict:
    stage = "algorithm_design" if focus == "structure" else "hardware_tuning"
    out = {"id": pid, "stage": stage, "focus": focus, "applies_to": applies_to,
           "text": text or f"Advice {pid}; it does not apply elsewhere. " + "x" * 80}
    if bottleneck:
        out["bottleneck"] = bottleneck
    return out


@pytest.fixture
def packs(write_pack):
    pack = {
        "name": "r", "version": "0.1.0", "description": "retrieval test pack",
        "principles": [
            _p("r/broad", ["elementwise", "reduction", "softmax", "normalization"]),
            _p("r/narrow", ["reduction"]),
            _p("r/pair", ["reduction", "softmax"]),
            _p("r/matmul-only", ["matmul"]),
            _p("r/tiling", ["reduction"], focus="tiling"),
            _p("r/structure", ["reduction"], focus="structure"),
            _p("r/compute", ["reduction", "softmax"], bottleneck="compute"),
            _p("r/memory", ["reduction", "softmax"], bottleneck="memory"),
        ],
    }
    return load_packs([write_pack(pack)], builtins=False, entry_points=False)


def _ids(principles) -> list[str]:
    return [p.id for p in principles]


def test_filters_by_stage_focus_and_op_class(packs) -> None:
    got = _ids(retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], token_budget=None))
    assert "r/matmul-only" not in got and "r/tiling" not in got and "r/structure" not in got
    assert set(got) == {"r/broad", "r/narrow", "r/pair", "r/compute", "r/memory"}
    assert _ids(retrieve(packs, stage=Stage.HARDWARE_TUNING, focus=Focus.TILING, op_classes=["reduction"])) == ["r/tiling"]
    assert _ids(retrieve(packs, stage="algorithm_design", focus="structure")) == ["r/structure"]
    assert _ids(retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["matmul"])) == ["r/matmul-only"]
    assert retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["conv"]) == []


def test_most_specific_first(packs) -> None:
    got = _ids(retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], token_budget=None))
    assert got.index("r/narrow") < got.index("r/pair") < got.index("r/broad")
    # a matching bottleneck lifts, a different one lowers
    got = _ids(retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"],
                        bottleneck="memory", token_budget=None))
    assert got[:2] == ["r/narrow", "r/memory"]  # 1.0 each: pack order breaks the tie
    assert got.index("r/memory") < got.index("r/pair") and got[-1] == "r/compute"
    # problems with several classes: overlap counts
    ranked = rank(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction", "softmax"])
    scores = {r.principle.id: r.score for r in ranked}
    assert scores["r/pair"] == scores["r/narrow"] == 1.0 and scores["r/broad"] == 0.5


def test_focus_none_means_every_focus_of_the_stage(packs) -> None:
    got = _ids(retrieve(packs, stage="hardware_tuning", op_classes=["reduction"], token_budget=None))
    assert "r/tiling" in got and "r/narrow" in got and "r/structure" not in got


def test_budget_is_respected_and_result_is_a_prefix(packs) -> None:
    full = retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], token_budget=None)
    one = principle_tokens(full[0])
    for budget in (0, one - 1, one, one * 2 + 1, one * 3, 10_000):
        got = retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], token_budget=budget)
        assert sum(principle_tokens(p) for p in got) <= budget
        assert got == full[: len(got)]
        assert len(render_principles(got)) / 4 <= budget + 1
    assert retrieve(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], token_budget=one - 1) == []


def test_deterministic(packs) -> None:
    args = dict(stage="hardware_tuning", focus="memory", op_classes=["reduction", "softmax"], bottleneck="memory")
    assert _ids(retrieve(packs, **args)) == _ids(retrieve(packs, **args))


def test_user_pack_ranks_before_builtin_at_equal_specificity(write_pack) -> None:
    builtins = load_packs(entry_points=False)
    ranked = rank(builtins, stage="hardware_tuning", focus="memory", op_classes=["reduction"], bottleneck="memory")
    top = ranked[0]
    clone = {"id": "user/tie", "stage": "hardware_tuning", "focus": "memory",
             "applies_to": [c.value for c in top.principle.applies_to],
             "bottleneck": top.principle.bottleneck.value if top.principle.bottleneck else None,
             "text": "A user's principle with the same specificity as the top built-in one, never ignored."}
    clone = {k: v for k, v in clone.items() if v is not None}
    user = write_pack({"name": "user", "version": "0.1.0", "description": "tie", "principles": [clone]})
    packs = load_packs([user], entry_points=False)
    got = rank(packs, stage="hardware_tuning", focus="memory", op_classes=["reduction"], bottleneck="memory")
    assert got[0].principle.id == "user/tie" and got[1].principle.id == top.principle.id
    assert got[0].score == got[1].score


def test_targets_filter_and_bonus() -> None:
    packs = load_packs(entry_points=False)
    args = dict(stage="algorithm_design", focus="structure", op_classes=["softmax"], token_budget=None)
    assert any(p.id.startswith("hopper-h200/") for p in retrieve(packs, target="sm_90", **args))
    assert any(p.id.startswith("hopper-h200/") for p in retrieve(packs, **args))
    assert not any(p.id.startswith("hopper-h200/") for p in retrieve(packs, target="sm_80", **args))


def test_builtins_answer_typical_tasks() -> None:
    packs = load_packs(entry_points=False)
    got = retrieve(packs, stage="algorithm_design", focus="structure", op_classes=["softmax"], bottleneck="memory")
    assert got[0].id == "algorithm-structure/softmax-one-pass-or-online"
    got = retrieve(packs, stage="hardware_tuning", focus="parallel_mapping", op_classes=["matmul"], bottleneck="compute")
    assert "parallel-mapping/grid-swizzle-for-l2" in _ids(got)[:2]
    got = retrieve(packs, stage="hardware_tuning", focus="tiling", op_classes=["matmul"], token_budget=400)
    assert 1 <= len(got) <= 3


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(stage="tuning"), "unknown stage 'tuning'"),
    (dict(stage="algorithm_design", focus="memory"), "not a focus of stage"),
    (dict(stage="hardware_tuning", focus="memory", op_classes=["gemm"]), "unknown operator class 'gemm'"),
    (dict(stage="hardware_tuning", focus="memory", bottleneck="bandwidth"), "unknown bottleneck"),
])
def test_bad_arguments_are_one_line_errors(packs, kwargs, match) -> None:
    with pytest.raises(EggInputError, match=match):
        retrieve(packs, **kwargs)


def test_render_cites_ids_and_templates() -> None:
    packs = load_packs(entry_points=False)
    text = render_principles([packs.find("algorithm-structure/softmax-one-pass-or-online")])
    assert text.startswith("- [algorithm-structure/softmax-one-pass-or-online] Choose the softmax")
    assert text.endswith("(reference template: algorithm-structure/row-softmax)")
    assert "\n" not in text


def test_held_out_pack_text_appears_only_for_its_stage_and_focus(write_pack) -> None:
    # One principle per focus, each with a marker no built-in text contains.
    principles = [
        {"id": f"held-out/{focus.replace('_', '-')}", "focus": focus,
         "stage": "algorithm_design" if focus == "structure" else "hardware_tuning",
         "applies_to": ["elementwise"], "bottleneck": "memory",
         "text": f"HELD-OUT-{focus.upper()} advice for elementwise kernels; it does not apply elsewhere."}
        for focus in ("structure", "parallel_mapping", "tiling", "memory")
    ]
    path = write_pack({"name": "held-out", "version": "0.0.1", "description": "held out", "principles": principles})
    packs = load_packs([path], entry_points=False)
    for stage, focuses in ((Stage.ALGORITHM_DESIGN, [Focus.STRUCTURE]),
                           (Stage.HARDWARE_TUNING, [Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY])):
        for focus in focuses:
            text = render_principles(retrieve(packs, stage=stage, focus=focus, op_classes=["elementwise"],
                                              bottleneck="memory", token_budget=1500))
            assert f"HELD-OUT-{focus.value.upper()}" in text
            others = [f for f in Focus if f is not focus]
            assert not any(f"HELD-OUT-{f.value.upper()}" in text for f in others)
