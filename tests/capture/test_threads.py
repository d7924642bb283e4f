"""Captures from several threads at once (a suite's problems, the analysis report beside the expert
agents): torch.export's global state (dispatch-mode stack, fx's patcher) must not be shared between
them. Without the capture lock every one of these failed ("Trying to pop empty mode stack",
"CURRENT_PATCHER is None in finally block")."""

from __future__ import annotations

import threading
from pathlib import Path

from egg.capture import capture_problem

CORPUS = Path(__file__).parents[1] / "frontend" / "corpus" / "softmax"


def test_two_threads_capture_side_by_side():
    files = sorted(CORPUS.glob("*.py"))[:2]
    expected = {f.name: len(capture_problem(f).call_nodes()) for f in files}
    got: list[tuple[str, int | str]] = []

    def work(path: Path) -> None:
        try:
            got.append((path.name, len(capture_problem(path).call_nodes())))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            got.append((path.name, f"{type(exc).__name__}: {exc}"))

    threads = [threading.Thread(target=work, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(got) == sorted(expected.items())
