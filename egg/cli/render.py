"""Everything the CLI shows a person: verdict panels, tables, progress bars (rich, on stdout)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from egg.evaluate.verdict import Verdict

console = Console()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_verdict(verdict: Verdict) -> None:
    status = "[bold green]ACCEPTED[/]" if verdict.accepted else f"[bold red]REJECTED[/] at {verdict.stage_failed}"
    console.print(f"{status}  {verdict.candidate}  ({verdict.backend}, {verdict.device})")
    for reason in verdict.reasons:
        console.print(f"  - {reason}", markup=False)
    if verdict.trials:
        passed = sum(t.passed for t in verdict.trials)
        worst = max((t.max_abs_err or 0.0) for t in verdict.trials)
        console.print(f"  correctness: {passed}/{len(verdict.trials)} trials passed, max abs err {worst:.3g}")
    if verdict.timing:
        table = Table(title=f"timing ({verdict.timed_shape_set})" + ("" if verdict.timing_comparable else " - not comparable on CPU"))
        for col in ("", "median", "p20", "p80", "runs", "speedup"):
            table.add_column(col)
        speedups = {"eager": None, "compile": None, "candidate": None}
        if verdict.candidate_ms:
            speedups["eager"] = verdict.speedup_vs_eager
            speedups["compile"] = verdict.speedup_vs_compile
        for name in ("eager", "compile", "candidate"):
            s = verdict.timing.get(name)
            if s is None:
                continue
            label = f"candidate vs {name}" if name != "candidate" else ""
            table.add_row(name, _ms(s.median_ms), _ms(s.p20_ms), _ms(s.p80_ms), str(s.runs),
                          _x(speedups[name]) if name != "candidate" else "")
            del label
        console.print(table)
    for note in verdict.notes:
        console.print(f"  note: {note}", markup=False)
    console.print(f"  archive: {verdict.archive_dir}", markup=False)
