"""Decisions in packs: what a user pack changes for the expert agents, and which principle did it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from egg.device import default_facts
from egg.errors import EggInputError
from principles import Facts, decide, load_kernel_template, load_pack, load_packs

H200 = default_facts()
REDUCTION_BF16 = Facts(op_classes=["reduction", "normalization"], bottleneck="memory", patterns=["rms_norm"],
                       dtypes=["bfloat16"], device=H200.name, sm_count=H200.sm_count, arch=H200.arch)

KERNEL_TEMPLATE = '''"""A user template under the expert's Template contract."""


class RowSum:
    name = "user-pack/row-sum"
    principle_ids = ["user-pack/tune-reductions"]

    def applies(self, kernel):
        return None if getattr(kernel, "kind", None) == "reduction" else "not a reduction"

    def tuning_space(self, kernel):
        return {"BLOCK": [256, 512]}

    def default_config(self, kernel, device):
        return {"BLOCK": 256}

    def render(self, kernel, config, ctx):
        raise NotImplementedError("rendered by the expert in phase B")


TEMPLATE = RowSum()
'''


def user_pack(**decision: Any) -> dict[str, Any]:
    """A pack with one principle carrying one decision block."""
    return {
        "name": "user-pack", "version": "1.0.0", "description": "A user's house rules.",
        "principles": [{
            "id": "user-pack/tune-reductions", "stage": "hardware_tuning", "focus": "tiling",
            "applies_to": ["reduction", "normalization"],
            "text": "House rule about reduction tiling.",
            "decisions": [decision],
        }],
    }


def decisions_with(write_pack, data: dict[str, Any], facts: Facts = REDUCTION_BF16, files=None):
    return decide(load_packs([write_pack(data, files=files)]), facts)


def test_builtins_alone_change_no_tuning_value_and_declare_constants() -> None:
    decisions = decide(load_packs(), REDUCTION_BF16)
    assert decisions.tuning == {} and decisions.variants == {} and decisions.kernel_templates == []
    assert decisions.constant("tiling/persistent-row-max") == 16384
    assert decisions.constant_decider("tiling/persistent-row-max") == "tiling/one-pass-row-limit"
    space, by = decisions.space("reduction", {"num_warps": [2, 4, 8]})
    assert space == {"num_warps": [2, 4, 8]} and by == []


def test_user_pack_adds_and_removes_tuning_values(write_pack) -> None:
    data = user_pack(tuning={"reduction": {"num_warps": {"add": [16], "remove": [2]}, "RBLOCK": {"replace": [1024]}}})
    decisions = decisions_with(write_pack, data)
    space, by = decisions.space("reduction", {"num_warps": [2, 4, 8], "RBLOCK": [64, 256, 1024], "XBLOCK": [1, 2]})
    assert space == {"num_warps": [4, 8, 16], "RBLOCK": [1024], "XBLOCK": [1, 2]}
    assert by == ["user-pack/tune-reductions"]
    # an edit that changes nothing decides nothing: drafts must not cite it
    values, by = decisions.values("reduction", "num_warps", [4, 8, 16])
    assert values == [4, 8, 16] and by == []
    assert decisions.space("pointwise", {"num_warps": [2, 4]}) == ({"num_warps": [2, 4]}, [])


def test_tuning_values_keep_bool_and_int_apart(write_pack) -> None:
    decisions = decisions_with(write_pack, user_pack(tuning={"reduction": {"PERSISTENT": {"remove": [True]}}}))
    assert decisions.values("reduction", "PERSISTENT", [True, False, 1]) == ([False, 1], ["user-pack/tune-reductions"])


def test_user_pack_switches_variants_off_and_reorders_them(write_pack) -> None:
    data = user_pack(variants={"less-fused": {"enabled": False}, "triton-matmul": {"priority": 5}})
    decisions = decisions_with(write_pack, data)
    ordered, by = decisions.order_variants(["fused", "triton-matmul", "less-fused"])
    assert ordered == ["triton-matmul", "fused"]
    assert by == ["user-pack/tune-reductions"]
    assert not decisions.variant_enabled("less-fused") and decisions.variant_enabled("fused")


def test_later_pack_switches_a_variant_back_on(write_pack, tmp_path) -> None:
    off = write_pack(user_pack(variants={"less-fused": {"enabled": False}}))
    on = user_pack(variants={"less-fused": {"enabled": True}})
    on["name"] = "team-pack"
    on["principles"][0]["id"] = "team-pack/keep-less-fused"
    decisions = decide(load_packs([off, write_pack(on)]), REDUCTION_BF16)
    assert decisions.order_variants(["fused", "less-fused"]) == (["fused", "less-fused"], [])
    assert decisions.variants["less-fused"].enabled.principle == "team-pack/keep-less-fused"


def test_user_pack_changes_a_builtin_constant(write_pack) -> None:
    decisions = decisions_with(write_pack, user_pack(constants={"tiling/persistent-row-max": 8192}))
    assert decisions.constant("tiling/persistent-row-max") == 8192
    assert decisions.constant_decider("tiling/persistent-row-max") == "user-pack/tune-reductions"
    assert any("tiling/persistent-row-max = 8192 (default 16384)" in line for line in decisions.explain())
    with pytest.raises(KeyError):
        decisions.constant("tiling/no-such-constant")


def test_user_pack_declares_its_own_constant_and_template(write_pack) -> None:
    data = user_pack(constants={"rows-per-program": 8}, kernel_templates=["row-sum"],
                     tuning={"user-pack/row-sum": {"BLOCK": {"add": [1024]}}})
    data["constants"] = [{"name": "rows-per-program", "type": "int", "default": 4, "description": "rows"}]
    data["kernel_templates"] = [{"name": "row-sum", "module": "kernels/row_sum.py", "description": "a row sum"}]
    packs = load_packs([write_pack(data, files={"kernels/row_sum.py": KERNEL_TEMPLATE})])
    decisions = decide(packs, REDUCTION_BF16)
    assert decisions.constant("user-pack/rows-per-program") == 8
    (choice,) = decisions.kernel_templates
    assert choice.ref == "user-pack/row-sum" and choice.principle == "user-pack/tune-reductions"
    template = load_kernel_template(packs, choice.ref)
    assert template.name == "user-pack/row-sum"
    assert template.tuning_space(None) == {"BLOCK": [256, 512]}
    assert decisions.space(template.name, template.tuning_space(None))[0] == {"BLOCK": [256, 512, 1024]}


def test_kernel_template_that_breaks_the_contract_is_one_line(write_pack) -> None:
    data = user_pack(kernel_templates=["row-sum"])
    data["kernel_templates"] = [{"name": "row-sum", "module": "kernels/row_sum.py", "description": "a row sum"}]
    broken = KERNEL_TEMPLATE.replace("def render(self", "def draw(self")
    packs = load_packs([write_pack(data, files={"kernels/row_sum.py": broken})])
    with pytest.raises(EggInputError, match=r"pack.yaml: kernel template row-sum: object: TEMPLATE lacks render\(\)"):
        load_kernel_template(packs, "user-pack/row-sum")
    renamed = KERNEL_TEMPLATE.replace('name = "user-pack/row-sum"', 'name = "row-sum"')
    packs = load_packs([write_pack(data, files={"kernels/row_sum.py": renamed})])
    with pytest.raises(EggInputError, match="its name is 'row-sum', expected 'user-pack/row-sum'"):
        load_kernel_template(packs, "user-pack/row-sum")


@pytest.mark.parametrize(("when", "reason"), [
    ({"dtypes": ["float32"]}, "when.dtypes [float32]: the problem has [bfloat16]"),
    ({"patterns": ["softmax"]}, "when.patterns [softmax]: the problem has [rms_norm]"),
    ({"devices": ["A100"]}, "when.devices [A100]: the device is NVIDIA H200"),
    ({"sm_count": {"max": 108}}, "when.sm_count ..108: the device has 132 SMs"),
    ({"bottleneck": "compute"}, "when.bottleneck [compute]: the problem has [memory]"),
    ({"op_classes": ["matmul"]}, "when.op_classes [matmul]"),
])
def test_decisions_apply_only_to_their_facts(write_pack, when, reason) -> None:
    decisions = decisions_with(write_pack, user_pack(when=when, tuning={"reduction": {"num_warps": {"add": [16]}}}))
    assert decisions.tuning == {} and decisions.applied == []
    (skipped,) = [s for s in decisions.skipped if s.principle == "user-pack/tune-reductions"]
    assert reason in skipped.reason


def test_decisions_that_match_apply(write_pack) -> None:
    when = {"dtypes": ["bfloat16", "float16"], "patterns": ["rms_norm"], "devices": ["h200"],
            "sm_count": {"min": 100, "max": 200}, "bottleneck": ["memory", "latency"]}
    decisions = decisions_with(write_pack, user_pack(when=when, tuning={"reduction": {"num_warps": {"add": [16]}}}))
    assert decisions.applied == ["user-pack/tune-reductions"]
    matmul = Facts.model_validate({**REDUCTION_BF16.model_dump(), "op_classes": ["matmul"]})
    skipped = decisions_with(write_pack, user_pack(tuning={"reduction": {"num_warps": {"add": [16]}}}), matmul).skipped
    assert "applies_to (reduction, normalization) meets none of the problem's op classes" in skipped[-1].reason


def test_pack_targets_gate_decisions(write_pack) -> None:
    data = user_pack(tuning={"reduction": {"num_warps": {"add": [16]}}})
    data["targets"] = ["sm_80"]
    decisions = decisions_with(write_pack, data)
    assert decisions.applied == [] and "targets sm_80, the device is sm_90" in decisions.skipped[-1].reason


def test_overriding_a_principle_by_id_replaces_its_decisions(write_pack) -> None:
    first = write_pack(user_pack(tuning={"reduction": {"num_warps": {"add": [16]}}}), name="first")
    second = user_pack(tuning={"reduction": {"num_warps": {"remove": [2]}}})
    second["version"] = "1.1.0"  # a newer copy of the same pack replaces the older one wholesale
    decisions = decide(load_packs([first, write_pack(second, name="second")]), REDUCTION_BF16)
    assert decisions.values("reduction", "num_warps", [2, 4]) == ([4], ["user-pack/tune-reductions"])


def test_later_pack_has_the_last_word(write_pack) -> None:
    first = write_pack(user_pack(tuning={"reduction": {"num_warps": {"replace": [4]}}}), name="first")
    team = user_pack(tuning={"reduction": {"num_warps": {"replace": [8, 16]}}})
    team["name"] = "team-pack"
    team["principles"][0]["id"] = "team-pack/more-warps"
    decisions = decide(load_packs([first, write_pack(team, name="team")]), REDUCTION_BF16)
    values, by = decisions.values("reduction", "num_warps", [2, 4])
    assert values == [8, 16]
    assert by == ["user-pack/tune-reductions", "team-pack/more-warps"]


def test_facts_from_a_real_analysis() -> None:
    from egg.analysis import analyze_problem

    root = Path(__file__).resolve().parents[2]
    analysis = analyze_problem(root / "workloads" / "rms_norm.py", shape_set="small")
    facts = Facts.from_analysis(analysis, H200)
    assert "normalization" in [c.value for c in facts.op_classes] or "reduction" in [c.value for c in facts.op_classes]
    assert facts.dtypes and facts.sm_count == 132 and facts.arch == "sm_90"
    assert facts.model_dump(mode="json") == Facts.from_analysis(analysis.model_dump(mode="json"), H200).model_dump(
        mode="json")


# -- one-line errors ---------------------------------------------------------------------------

def _error(path: Path) -> str:
    with pytest.raises(EggInputError) as info:
        load_packs([path])
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(("decision", "expected"), [
    ({"when": {"dtypes": ["fp32"]}, "constants": {"tiling/persistent-row-max": 1}},
     "principle user-pack/tune-reductions: decisions[0].when.dtypes[0]: input should be"),
    ({"tuning": {"reduction": {"num_warps": {"replace": [4], "add": [8]}}}},
     "decisions[0].tuning.reduction.num_warps: 'replace' sets the values outright"),
    ({"tuning": {"reduction": {"num_warps": {}}}}, "decisions[0].tuning.reduction.num_warps: give 'add'"),
    ({"variants": {"less-fused": {}}}, "decisions[0].variants.less-fused: give 'enabled', 'priority' or both"),
    ({"when": {"dtypes": ["float32"]}}, "decisions[0]: a decision must change something"),
    ({"constants": {"tiling/no-such": 1}}, "decisions[0].constants.tiling/no-such: no constant 'tiling/no-such'"),
    ({"constants": {"tiling/persistent-row-max": "big"}},
     "decisions[0].constants.tiling/persistent-row-max: value 'big' is not of type int"),
    ({"constants": {"tiling/persistent-row-max": 0}}, "value 0 is below the minimum 1"),
    ({"constants": {"mine": 1}}, "decisions[0].constants.mine: no constant 'mine' declared in pack 'user-pack'"),
    ({"kernel_templates": ["other-pack/x"]}, "decisions[0].kernel_templates: no kernel template 'other-pack/x'"),
    ({"tuning": {"other-pack/x": {"BLOCK": {"add": [1]}}}}, "decisions[0].tuning.other-pack/x: no kernel template"),
    ({"when": {"sm_count": {"min": 200, "max": 100}}, "constants": {"tiling/persistent-row-max": 1}},
     "decisions[0].when.sm_count: min 200 is above max 100"),
    ({"shapes": [1]}, "decisions[0].shapes: unknown field"),
])
def test_bad_decisions_are_one_line_errors(write_pack, decision, expected) -> None:
    path = write_pack(user_pack(**decision))
    message = _error(path)
    assert str(path / "pack.yaml") in message
    assert expected in message, message


def test_bad_declarations_are_one_line_errors(write_pack) -> None:
    data = user_pack(constants={"tiling/persistent-row-max": 1})
    data["constants"] = [{"name": "rows", "type": "int", "default": "four", "description": "rows"}]
    assert "constant rows: default: value 'four' is not of type int" in _error(write_pack(data, name="a"))
    data["constants"] = [{"name": "rows", "type": "int", "default": 4, "description": "rows", "principle": "nope"}]
    assert "constant rows: principle: no principle 'user-pack/nope'" in _error(write_pack(data, name="b"))
    del data["constants"]
    data["kernel_templates"] = [{"name": "row-sum", "module": "kernels/row_sum.py", "description": "a row sum"}]
    message = _error(write_pack(data, name="c", files={"kernels/row_sum.py": "x = 1\n"}))
    assert "kernel template row-sum: object: no top-level 'TEMPLATE' in row_sum.py" in message
    data["kernel_templates"][0]["module"] = "../escape.py"
    assert "kernel template row-sum: module: '../escape.py' must be a relative .py path" in _error(
        write_pack(data, name="d"))


def test_device_rows_in_a_pack(write_pack) -> None:
    from principles import device_table

    data = user_pack(constants={"tiling/persistent-row-max": 1})
    data["devices"] = [{"match": "RTX 6000 Ada", "arch": "sm_89", "sm_count": 142, "shared_memory_per_block": 101376,
                        "l2_bytes": 96 * 2**20, "memory_bytes_per_s": 0.9e12, "peak_flops": {"fp32": 91e12},
                        "source": "our own measurement"}]
    packs = load_packs([write_pack(data)])
    table = device_table(packs)
    assert table[0].match == "RTX 6000 Ada" and any(row.match == "H200" for row in table)
    data["devices"][0]["peak_flops"] = {"fp33": 1.0}
    assert "device RTX 6000 Ada: peak_flops.fp33" in _error(write_pack(data, name="bad"))
    assert load_pack(write_pack(user_pack(variants={"fused": {"priority": 1}}), name="ok")).pack.name == "user-pack"


def test_the_hopper_pack_states_the_device_tables_numbers() -> None:
    """The H200 numbers the prompts cite and the ones the evidence measures against are the same."""
    from egg.device import DEFAULT_GPU

    text = " ".join(load_packs().find("hopper-h200/roofline-numbers").text.split())
    assert f"about {DEFAULT_GPU.memory_bytes_per_s / 1e12:.1f} TB/s" in text
    assert f"about {DEFAULT_GPU.peak_flops['bf16_tensor'] / 1e12:.0f} TFLOP/s dense bf16" in text
    assert f"about {DEFAULT_GPU.peak_flops['fp32'] / 1e12:.0f} TFLOP/s fp32" in text
    assert f"{DEFAULT_GPU.sm_count} SMs" in text
