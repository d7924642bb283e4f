"""Everything the CLI shows a person: verdict panels, tables, progress bars (rich, on stdout)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from egg.evaluate.verdict import Verdict

# Logs and CI capture are not terminals: give tables room instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160)


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


class OptimizeProgress:
    """Live display of a run: stage, candidates evaluated, best speedup so far.

    Only on a terminal: piped or captured, stdout carries the results alone (a spinner's last frame
    would land there before a one-line error, or in a log).
    """

    def __init__(self) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[stage]}[/]"),
            TextColumn("{task.completed:.0f} evaluated, {task.fields[accepted]} accepted"),
            TextColumn("best: {task.fields[best]}"),
            TextColumn("{task.fields[last]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal,
        )
        self._task = self._progress.add_task("run", total=None, stage="start", accepted=0, best="-", last="")
        self._accepted = 0
        self._best: float | None = None

    def __enter__(self) -> OptimizeProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "stage":
            self._progress.update(self._task, stage=event["stage"])
        elif kind == "agent":
            self._progress.update(self._task, last=f"{event['agent']} (round {event['round']}) ...")
        elif kind == "candidate":
            record = event["record"]
            if record.accepted:
                self._accepted += 1
                if record.timing_comparable and record.speedup_vs_eager:
                    self._best = max(self._best or 0.0, record.speedup_vs_eager)
            best = f"{self._best:.2f}x vs eager" if self._best else ("accepted (CPU)" if self._accepted else "-")
            verdict = "ok" if record.accepted else f"rejected ({record.stage_failed})"
            self._progress.update(self._task, advance=1, accepted=self._accepted, best=best,
                                  last=f"{record.id}: {verdict}")


def render_report(report) -> None:  # type: ignore[no-untyped-def]
    table = Table(title=f"candidates ({report.device}{'' if report.timing_comparable else ', timings not comparable'})")
    for col in ("id", "stage", "agent", "verdict", "ms", "vs eager", "vs compile"):
        table.add_column(col, no_wrap=col in ("id", "agent"))
    for r in report.candidates:
        verdict = "[green]accepted[/]" if r.accepted else f"[red]{r.stage_failed}[/]"
        stage = {"algorithm_design": "1 design", "hardware_tuning": "2 tuning"}.get(r.stage, r.stage)
        table.add_row(r.id, stage, r.agent, verdict, _ms(r.candidate_ms).replace(" ms", ""),
                      _x(r.speedup_vs_eager) if r.timing_comparable else "-",
                      _x(r.speedup_vs_compile) if r.timing_comparable else "-")
    console.print(table)
    for item in report.rejected:
        reason = item["reasons"][0] if item["reasons"] else ""
        console.print(f"  rejected {item['id'] or '(no candidate)'} [{item['agent']}]: {reason}", markup=False)
    console.print(f"[bold]{report.outcome}[/]")
    usage = report.llm_usage
    if usage.get("model"):
        console.print(f"  llm {usage['model']}: {usage.get('calls', 0)} requests ({usage.get('successful_calls', 0)} "
                      f"answered, {usage.get('failed_calls', 0)} failed), {usage.get('total_tokens', 0)} tokens",
                      markup=False)
    if report.best is not None and report.timing_comparable:
        console.print(f"  speedup: {_x(report.speedup_vs_eager)} vs eager, {_x(report.speedup_vs_compile)} vs torch.compile")
    for note in report.notes:
        console.print(f"  note: {note}", markup=False)
    console.print(f"  run directory: {report.run_dir}", markup=False)
