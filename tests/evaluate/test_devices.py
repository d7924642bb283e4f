"""Which devices an evaluation runs on: ``--device`` resolved, visible GPUs, a harness's judge slots."""

from __future__ import annotations

import pytest
import torch

from egg.errors import EggInputError
from egg.evaluate.devices import JUDGES_PER_GPU, device_slots, resolve_device, visible_gpus


def test_auto_follows_what_the_machine_has() -> None:
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"


def test_cuda_without_a_gpu_is_a_clear_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(EggInputError, match=r"--device cuda: no CUDA device .* \(use --device cpu\)"):
        resolve_device("cuda")


@pytest.mark.parametrize("given", ["gpu", "CUDA", "cuda:0", ""])
def test_an_unknown_device_names_what_was_expected(given: str) -> None:
    with pytest.raises(EggInputError, match=r"--device: expected auto, cpu or cuda, got"):
        resolve_device(given)


def test_visible_gpus_keep_the_users_spelling_up_to_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1f2e, MIG-77a0 ,3")
    assert visible_gpus() == ["GPU-1f2e", "MIG-77a0"]  # CUDA saw two of the three entries
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert visible_gpus() == ["0", "1"]


def test_judge_slots_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    assert device_slots("cpu", None) == [("cpu", None)]
    assert device_slots("cpu", 3) == [("cpu", None)] * 3
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    slots = device_slots("cuda", None)
    # JUDGES_PER_GPU judges on each visible GPU, interleaved so consecutive judges use different GPUs
    assert len(slots) == 2 * JUDGES_PER_GPU
    assert slots[:2] == [("cuda:0", "4"), ("cuda:1", "6")]
    assert device_slots("cuda", 1) == [("cuda:0", "4"), ("cuda:1", "6")]
