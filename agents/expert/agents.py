"""Expert agents: the Agent protocol played with the codegen and its templates instead of an LLM.

What the graph hands them decides what they propose: ``task.decisions`` (the principle packs'
variant switches, tuning values, constants and user templates for this problem and device:
:mod:`agents.expert.choices`), ``task.strategies`` (the transition memory's expected gain per
move on problems like this one: the order of their moves) and ``task.attempts`` (what this run
already evaluated: never proposed again, and a tolerance rejection is answered).

* :class:`ExpertDesigner` (stage 1, focus structure): one Draft per offered structural variant, in
  the packs' order re-ranked by the memory. With more than one design round, the ``less-fused``
  fallback waits for round 2, where it is proposed when a round-1 draft missed the tolerance (on
  a GPU also without one: it is measured); after that the designer is exhausted. A fresh designer
  in a resumed run recalls what it proposed from the run's attempts (renders are deterministic).
* :class:`ExpertTuner` (stage 2; one per focus): re-renders an expert-generated parent (the
  lineage's best, which starts from stage 1's best structure) with other values of the parameters
  its focus owns (:mod:`agents.expert.tuning`). On a GPU it first screens up to the packs'
  ``tiling/screen-configs`` configs (single moves and pairs) against the parent by measurement
  (:mod:`agents.expert.screen`) and proposes the fastest two that beat the parent; none if none
  does (said in ``last_errors``); the packs' order, labelled unmeasured, if the screen itself
  fails. On CPU (the interpreter: timings mean nothing) exactly one config, labelled as such. A
  config whose sibling was rejected for tolerance in this run is not tried again.

Neither raises for a problem it cannot handle: it returns no draft and says why in
``last_errors`` (the graph reports those); every draft names the compute ops left to torch and
the principles that decided it.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from agents.expert.decline import ExpertDecline
from agents.expert.choices import Choices, Offer, choices_for
from agents.expert.design import ExpertCandidate, ExpertProgram, analyse, read_config, render, siblings_of
from agents.expert.screen import PARENT, screen
from agents.expert.target import SCREEN_CONFIGS, SCREEN_SECONDS
from agents.expert.tuning import Move, configs, moves
from agents.protocol import AgentExhausted, AgentTask, Attempt, Draft
from egg.vocabulary import Backend, Focus

log = structlog.get_logger(__name__)

GPU_CONFIGS = 2  # per focus and parent: the graph measures each; more rounds beat more breadth
SCREEN_MARGIN = 0.02  # a screened config is proposed only if it beats the parent by more than this
CPU_NOTE = "CPU run: config chosen by heuristic, not measured"
CUDA_DECLINE = "the expert templates are Triton kernels: backend cuda has no expert template"
_lock = threading.Lock()  # problem imports and captures are not made for concurrent graph nodes
_cache: dict[tuple[str, float, str], ExpertProgram | str] = {}


def resolve_device(device: str | None) -> str:
    """``cuda`` or ``cpu`` for heuristics; ``auto``/None follow what this machine has."""
    if device in ("cpu", "cuda"):
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def program_for(problem_path: str, shape_set: str = "default") -> ExpertProgram:
    """The analysed problem (cached per file version and shape set); ExpertDecline otherwise."""
    path = Path(problem_path)
    key = (str(path.resolve()), path.stat().st_mtime if path.exists() else 0.0, shape_set)
    with _lock:
        if key not in _cache:
            try:
                _cache[key] = analyse(path, shape_set)
            except ExpertDecline as exc:
                _cache[key] = str(exc)
            except Exception as exc:  # noqa: BLE001 - a codegen bug must not end the run; it is reported
                log.warning("expert.analyse_failed", problem=path.name, error=repr(exc))
                _cache[key] = f"expert codegen failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        cached = _cache[key]
    if isinstance(cached, str):
        raise ExpertDecline(cached)
    return cached


def _siblings(problem_path: str, shape_set: str) -> list[ExpertProgram]:
    """The problem's other shape sets (cached like the first), for a candidate that runs them all."""
    try:
        return siblings_of(problem_path, shape_set, analysed=program_for)
    except Exception as exc:  # noqa: BLE001 - the other sets are an extra: the candidate is still right for its own
        log.warning("expert.siblings_failed", problem=Path(problem_path).name, error=repr(exc))
        return []


FALLBACK = "less-fused"  # the accurate fallback structure (each reduction its own kernel)
TOLERANCE_STAGE = "correctness"


def sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _choices(task: AgentTask, device: str) -> Choices:
    return choices_for(device, task.decisions)


def _scores(task: AgentTask) -> dict[str, float]:
    return {s.strategy: s.score for s in task.strategies}


def _mine(task: AgentTask, proposed: dict[str, str]) -> list[tuple[Attempt, str]]:
    """This agent's evaluated attempts with what each was (a variant id or a move)."""
    return [(a, proposed[a.source_sha256]) for a in task.attempts if a.source_sha256 in proposed]


def _notes(c: ExpertCandidate, device: str) -> list[str]:
    notes = [f"variant {c.variant}: {c.kernels} generated kernel launch(es) per call"]
    notes.append(f"kept in torch: {', '.join(c.torch_ops)}" if c.torch_ops else "no compute op left in torch")
    if device == "cpu":
        notes.append(CPU_NOTE)
    return notes


class ExpertDesigner:
    """Stage 1: one Draft per structural variant (fused, Triton matmul, less fused)."""

    def __init__(self, device: str = "auto", backend: Backend = Backend.TRITON, name: str = "expert-designer",
                 shape_set: str = "default", rounds: int = 1) -> None:
        self.name = name
        self.shape_set = shape_set
        self.device = resolve_device(device)
        self.backend = backend
        self.rounds = rounds  # the run's design rounds: with more than one, the fallback waits for round 2
        self.last_errors: list[str] = []
        self._proposed: dict[str, dict[str, str]] = {}  # problem -> source sha -> variant id
        self._done: set[str] = set()

    def propose(self, task: AgentTask) -> list[Draft]:
        self.last_errors = []
        if Backend.CUDA in (task.backend, self.backend):
            self.last_errors = [CUDA_DECLINE]
            return []
        key = task.problem_path
        if key in self._done:
            raise AgentExhausted("the expert designer proposed every structure it knows")
        try:
            program = program_for(task.problem_path, self.shape_set)
            choices = _choices(task, self.device)
        except ExpertDecline as exc:
            self._done.add(key)
            self.last_errors = [f"expert declined: {exc}"]
            log.info("expert.declined", problem=Path(task.problem_path).name, reason=str(exc))
            return []
        offers = choices.offers(program)
        scores = _scores(task)  # the memory: variants that paid off on problems like this one first
        offers.sort(key=lambda o: -scores.get(f"variant {o.variant.id}", 0.0))
        if task.round > 1 and key not in self._proposed:
            # A resumed run (a fresh designer): what this designer proposed before is in the run's
            # attempts; rendering is deterministic, so the same offers give back the same sources.
            self._proposed[key] = self._recall(task, program, offers)
            if not self._proposed[key]:
                raise AgentExhausted("the expert designer proposed every structure it knows")
        proposed = self._proposed.setdefault(key, {})
        if not proposed:  # round 1 (or a resumed designer): everything but the fallback, if it can wait
            wait = self.rounds > 1 and task.round < self.rounds
            now = [o for o in offers if not (wait and o.variant.id == FALLBACK)] or offers
            why: dict[str, str] = {}
            if len(now) == len(offers):
                self._done.add(key)
        else:
            self._done.add(key)
            now, why = self._repairs(task, offers, proposed)
            if not now:
                raise AgentExhausted("the expert designer proposed every structure the evidence calls for")
        return self._render(task, program, now, why)

    def _repairs(self, task: AgentTask, offers: list[Offer], proposed: dict[str, str],
                 ) -> tuple[list[Offer], dict[str, str]]:
        """Round 2: the fallback where a round-1 variant missed the tolerance (on a GPU also
        without one: it is measured), never a structure already proposed."""
        left = [o for o in offers if o.variant.id not in proposed.values()]
        missed = [(a, v) for a, v in _mine(task, proposed) if a.stage_failed == TOLERANCE_STAGE]
        if missed:
            note = "; ".join(f"{a.id} (variant {v}) missed the tolerance" for a, v in missed[:3])
            return [o for o in left if o.variant.id == FALLBACK], {FALLBACK: f"accuracy repair: {note}"}
        return ([o for o in left if o.variant.id == FALLBACK] if self.device == "cuda" else []), {}

    def _recall(self, task: AgentTask, program: ExpertProgram, offers: list[Offer]) -> dict[str, str]:
        """Source sha -> variant id of the offers this designer's evaluated attempts came from."""
        mine = {a.source_sha256 for a in task.attempts if a.agent == self.name}
        recalled: dict[str, str] = {}
        for offer, c in self._rendered(task, program, offers, report=False):
            if sha(c.source) in mine:
                recalled[sha(c.source)] = offer.variant.id
        log.info("expert.recalled", problem=Path(task.problem_path).name, variants=sorted(recalled.values()))
        return recalled

    def _rendered(self, task: AgentTask, program: ExpertProgram, offers: list[Offer], report: bool = True,
                  ) -> list[tuple[Offer, ExpertCandidate]]:
        """Each offer rendered; a variant that fails to render is reported (``report``) and skipped."""
        siblings = _siblings(task.problem_path, self.shape_set)
        choices = _choices(task, self.device)
        out: list[tuple[Offer, ExpertCandidate]] = []
        for offer in offers:
            variant = offer.variant
            try:
                out.append((offer, render(program, variant, choices.target, siblings=siblings, pick=offer.pick,
                                          principles=offer.principle_ids)))
            except Exception as exc:  # noqa: BLE001 - one variant's failure must not lose the others; reported
                if report:
                    self.last_errors.append(f"variant {variant.id}: {type(exc).__name__}: {exc}"[:400])
                    log.warning("expert.render_failed", variant=variant.id, error=repr(exc))
        return out

    def _render(self, task: AgentTask, program: ExpertProgram, offers: list[Offer], why: dict[str, str],
                ) -> list[Draft]:
        drafts: list[Draft] = []
        proposed = self._proposed[task.problem_path]
        for offer, c in self._rendered(task, program, offers):
            variant = offer.variant
            proposed[sha(c.source)] = variant.id
            notes = _notes(c, self.device) + ([why[variant.id]] if variant.id in why else [])
            drafts.append(Draft(agent=self.name, stage=task.stage, focus=task.focus, source=c.source,
                                structure=c.structure, principle_ids=c.principle_ids, notes=notes))
        log.info("expert.designed", problem=Path(task.problem_path).name, drafts=len(drafts),
                 variants=[o.variant.id for o in offers])
        return drafts


class ExpertTuner:
    """Stage 2: re-render an expert parent with other values of this focus's parameters."""

    def __init__(self, focus: Focus, device: str = "auto", backend: Backend = Backend.TRITON,
                 name: str | None = None, shape_set: str = "default", measure: bool | None = None) -> None:
        """``measure``: screen configs by measurement before proposing them (:mod:`agents.expert.screen`);
        None: on a GPU, where the packs' ``tiling/screen-configs`` is above 0. True on the CPU ranks
        configs by the interpreter's speed, which says nothing about a GPU (the tests use it)."""
        short = {Focus.PARALLEL_MAPPING: "mapping", Focus.TILING: "tiling", Focus.MEMORY: "memory"}
        self.shape_set = shape_set
        self.focus = focus
        self.name = name or f"expert-{short.get(focus, focus.value)}"
        self.device = resolve_device(device)
        self.backend = backend
        self.measure = self.device == "cuda" if measure is None else measure
        self.last_errors: list[str] = []
        # Bodies already proposed, refined or screened in this run: round 2 must not re-propose
        # round 1's parent (a move back to the old value), a sibling's config or a screened loser.
        self._seen: set[str] = set()
        self._moves: dict[str, str] = {}  # source sha -> the config's strategy (to read attempts back)

    def propose(self, task: AgentTask) -> list[Draft]:
        self.last_errors = []
        if Backend.CUDA in (task.backend, self.backend):
            self.last_errors = [CUDA_DECLINE]
            return []
        parent = task.parent
        config = read_config(parent.source) if parent is not None else None
        if parent is None or config is None:
            self.last_errors = [("the parent candidate was not generated by the expert agents (no "
                                 "EGG-EXPERT-CONFIG block): the expert tuner has nothing to re-render")]
            return []
        try:
            program = program_for(task.problem_path, config.shape_set)
            variant = program.variant(config.variant)
            choices = _choices(task, self.device)
            pick = choices.picker_for(config)
        except (ExpertDecline, ValueError) as exc:
            self.last_errors = [f"expert declined: {exc}"]
            return []
        if not choices.enabled(variant.id):
            self.last_errors = [f"variant {variant.id} is switched off by the principle packs: not refined"]
            return []
        self._seen.add(_body(parent.source))
        # a config whose draft missed the tolerance in this run (any parent) is not tried again
        missed = {self._moves[a.source_sha256] for a in task.attempts
                  if a.stage_failed == TOLERANCE_STAGE and a.source_sha256 in self._moves}
        scores = _scores(task)
        ordered = [m for m in moves(variant, config.by_kernel(), self.focus, choices, pick, scores)
                   if m.strategy() not in missed]
        job = _Job(task, program, variant, choices, pick, config.by_kernel(),
                   _siblings(task.problem_path, config.shape_set) if config.specialised[1:] else [],
                   {a.source_sha256 for a in task.attempts}, missed)
        size = int(choices.target.const(SCREEN_CONFIGS)) if self.measure else 0
        if size > 0:
            drafts = self._screened(job, configs(ordered, size), config.shape_set)
        else:
            drafts = self._in_order(job, [[m] for m in ordered], GPU_CONFIGS if self.device == "cuda" else 1,
                                    bool(scores))
        if not drafts and not self.last_errors:
            self.last_errors = [f"no {self.focus.value} parameter of this candidate's kernels can change the code "
                                "to a config not evaluated yet"]
        return drafts

    def _rendered(self, job: _Job, configs_: list[list[Move]], limit: int) -> list[tuple[list[Move], ExpertCandidate]]:
        """Up to ``limit`` configs rendered, skipping those the template rejects, that do not change
        the code, or that this run has evaluated or screened already."""
        out: list[tuple[list[Move], ExpertCandidate]] = []
        for cfg in configs_:
            if _strategy(cfg) in job.missed:
                continue
            overrides = {k: dict(v) for k, v in job.current.items()}
            for move in cfg:
                overrides.setdefault(move.kernel, {})[move.param] = move.new
            try:
                c = render(job.program, job.variant, job.choices.target, overrides, siblings=job.siblings,
                           pick=job.pick, principles=sorted({p for m in cfg for p in m.principle_ids}))
            except Exception as exc:  # noqa: BLE001 - a config the template rejects: try the next one
                log.debug("expert.tuner_config_failed", config=_text(cfg), error=repr(exc))
                continue
            body = _body(c.source)
            if body in self._seen or sha(c.source) in job.evaluated:
                continue  # the change does not reach the code, or this run evaluated it already
            self._seen.add(body)
            out.append((cfg, c))
            if len(out) >= limit:
                break
        return out

    def _in_order(self, job: _Job, configs_: list[list[Move]], limit: int, memory: bool) -> list[Draft]:
        """The first ``limit`` configs in the packs' (and the memory's) order, unmeasured."""
        order = "the transition memory's gains, then the packs' order" if memory else "the packs' order"
        drafts = []
        for rank, (cfg, c) in enumerate(self._rendered(job, configs_, limit), start=1):
            how = CPU_NOTE if self.device == "cpu" else (
                f"config {rank} of up to {GPU_CONFIGS}, ordered by {order}; the harness measures each")
            drafts.append(self._draft(job.task, c, cfg, how))
        return drafts

    def _screened(self, job: _Job, configs_: list[list[Move]], shape_set: str) -> list[Draft]:
        """Every config measured against the parent (:func:`agents.expert.screen.screen`); the
        fastest ``GPU_CONFIGS`` that beat it by more than ``SCREEN_MARGIN`` are proposed."""
        rendered = self._rendered(job, configs_, len(configs_))
        if not rendered:
            return []
        assert job.task.parent is not None
        keys = {f"config_{i}": pair for i, pair in enumerate(rendered)}
        sources = {PARENT: job.task.parent.source, **{k: c.source for k, (_, c) in keys.items()}}
        report = screen(job.task.problem_path, sources, shape_set=shape_set, keep=GPU_CONFIGS,
                        seconds=float(job.choices.target.const(SCREEN_SECONDS)), device=self.device)
        if report.error is not None:  # reported, never silent: the drafts say they are unmeasured
            log.warning("expert.screen_failed", problem=Path(job.task.problem_path).name, error=report.error)
            why = f"config screen failed ({report.error}); configs in the packs' order, unmeasured"
            return [self._draft(job.task, c, cfg, why) for cfg, c in rendered[:GPU_CONFIGS]]
        winners = report.faster_than_parent(SCREEN_MARGIN)[:GPU_CONFIGS]
        parent = report.entry(PARENT)
        base = parent.medians_ms[-1] if parent is not None and parent.medians_ms else None
        if not winners:
            self.last_errors = [f"{self.focus.value}: {report.summary()}; none beat the parent "
                                f"({_ms(base)}) by more than {SCREEN_MARGIN:.0%}"]
            return []
        drafts = []
        for e in winners:
            cfg, c = keys[e.key]
            why = (f"{report.summary()}: {e.medians_ms[-1]:.4f} ms against the parent's {_ms(base)} at "
                   f"the same calls (the screen's timing, not the verdict; the harness measures it)")
            drafts.append(self._draft(job.task, c, cfg, why))
        return drafts

    def _draft(self, task: AgentTask, c: ExpertCandidate, cfg: list[Move], how: str) -> Draft:
        self._moves[sha(c.source)] = _strategy(cfg)
        notes = [f"{self.focus.value}: {_text(cfg)}", *_notes(c, self.device)[1:2], how]
        assert task.parent is not None
        return Draft(agent=self.name, stage=task.stage, focus=self.focus, source=c.source,
                     structure=f"{c.structure} [{_text(cfg)}]"[:400], principle_ids=c.principle_ids,
                     parent_id=task.parent.id, notes=notes)


@dataclass
class _Job:
    """What one propose() call renders configs from."""

    task: AgentTask
    program: ExpertProgram
    variant: Any
    choices: Choices
    pick: Any
    current: dict[str, dict[str, Any]]
    siblings: list[ExpertProgram]
    evaluated: set[str]
    missed: set[str]


def _strategy(cfg: list[Move]) -> str:
    """The memory's name for a config (egg.memory.directions.classify joins a change's moves so)."""
    return ", ".join(sorted({m.strategy() for m in cfg}))


def _text(cfg: list[Move]) -> str:
    return " + ".join(m.text() for m in cfg)


def _ms(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:.4f} ms"


def _body(source: str) -> str:
    """The source without its leading comment header (where only the config text differs)."""
    lines = source.splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        i += 1
    return "\n".join(lines[i:])
