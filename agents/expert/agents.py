"""Expert agents: the Agent protocol played with the codegen and its templates instead of an LLM.
This module holds the stage-1 designer and what both expert agents share.

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
* :class:`~agents.expert.tuner.ExpertTuner` (stage 2, :mod:`agents.expert.tuner`) shares this
  module's helpers: the analysed problem, the packs' choices, the memory's scores, the notes.

Neither raises for a problem it cannot handle: it returns no draft and says why in
``last_errors`` (the graph reports those); every draft names the compute ops left to torch and
the principles that decided it.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import structlog

from agents.expert.decline import ExpertDecline
from agents.expert.choices import Choices, Offer, choices_for
from agents.expert.design import ExpertCandidate, ExpertProgram, analyse, render, siblings_of
from agents.expert.schedule import SplitRule
from agents.expert.target import REMEMBERED_CONFIGS, Target
from agents.expert.warm_start import PRINCIPLE, notes_for, remembered_overrides
from agents.protocol import AgentExhausted, AgentTask, Attempt, Draft
from egg.vocabulary import Backend

log = structlog.get_logger(__name__)

CPU_NOTE = "CPU run: config chosen by heuristic, not measured"
CUDA_DECLINE = "the expert templates are Triton kernels: backend cuda has no expert template"
_lock = threading.Lock()  # problem imports and captures are not made for concurrent graph nodes
_cache: dict[tuple[str, float, str, SplitRule], ExpertProgram | str] = {}


def design_device(device: str | None) -> str:
    """The device the expert designs for (``cuda`` or ``cpu``: which heuristics and templates apply);
    ``auto``/None follow what this machine has. Not where anything runs: designing for ``cuda`` on a
    machine without a GPU is how the static reports read the GPU kernels (the judge's device is
    :func:`egg.evaluate.devices.resolve_device`, which refuses ``cuda`` there)."""
    if device in ("cpu", "cuda"):
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def program_for(problem_path: str, shape_set: str = "default", target: str | Target = "cuda") -> ExpertProgram:
    """The analysed problem for ``target`` (cached per file version, shape set and the target's
    split rule); ExpertDecline otherwise."""
    path = Path(problem_path)
    key = (str(path.resolve()), path.stat().st_mtime if path.exists() else 0.0, shape_set, SplitRule.of(target))
    with _lock:
        if key not in _cache:
            try:
                _cache[key] = analyse(path, shape_set, target)
            except ExpertDecline as exc:
                _cache[key] = str(exc)
            except Exception as exc:  # noqa: BLE001 - a codegen bug must not end the run; it is reported
                log.warning("expert.analyse_failed", problem=path.name, error=repr(exc))
                _cache[key] = f"expert codegen failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        cached = _cache[key]
    if isinstance(cached, str):
        raise ExpertDecline(cached)
    return cached


def shape_siblings(problem_path: str, shape_set: str, target: str | Target = "cuda") -> list[ExpertProgram]:
    """The problem's other shape sets (cached like the first), for a candidate that runs them all."""
    try:
        return siblings_of(problem_path, shape_set, analysed=program_for, target=target)
    except Exception as exc:  # noqa: BLE001 - the other sets are an extra: the candidate is still right for its own
        log.warning("expert.siblings_failed", problem=Path(problem_path).name, error=repr(exc))
        return []


FALLBACK = "less-fused"  # the accurate fallback structure (each reduction its own kernel)
TOLERANCE_STAGE = "correctness"


def sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def task_choices(task: AgentTask, device: str) -> Choices:
    return choices_for(device, task.decisions)


def memory_scores(task: AgentTask) -> dict[str, float]:
    return {s.strategy: s.score for s in task.strategies}


def memory_order(offers: list[Offer], scores: dict[str, float]) -> dict[str, str]:
    """Sort ``offers`` (in place) by the memory's scores (``memory_scores``), the packs' order
    breaking ties; returns a note for each variant the memory moved, so the draft says why it came
    where it did."""
    def score(o: Offer) -> float:
        return scores.get(f"variant {o.variant.id}", 0.0)

    packs = [o.variant.id for o in offers]
    offers.sort(key=lambda o: -score(o))
    return {o.variant.id: (f"transition memory: expected log-gain {score(o):+.2f} against the other structures on "
                           f"problems of this kind; proposed {i + 1} of {len(offers)} (the packs' order: "
                           f"{packs.index(o.variant.id) + 1})")
            for i, o in enumerate(offers) if packs.index(o.variant.id) != i}


def _mine(task: AgentTask, proposed: dict[str, str]) -> list[tuple[Attempt, str]]:
    """This agent's evaluated attempts with what each was (a variant id or a move)."""
    return [(a, proposed[a.source_sha256]) for a in task.attempts if a.source_sha256 in proposed]


def draft_notes(c: ExpertCandidate, device: str) -> list[str]:
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
        self.device = design_device(device)
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
            choices = task_choices(task, self.device)
            program = program_for(task.problem_path, self.shape_set, choices.target)
        except ExpertDecline as exc:
            self._done.add(key)
            self.last_errors = [f"expert declined: {exc}"]
            log.info("expert.declined", problem=Path(task.problem_path).name, reason=str(exc))
            return []
        offers = choices.offers(program)
        moved = memory_order(offers, memory_scores(task))  # the memory: variants that paid off on problems like this one first
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
            why: dict[str, str] = dict(moved)
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
        for offer, c, _ in self._rendered(task, program, offers, report=False):
            if sha(c.source) in mine:
                recalled[sha(c.source)] = offer.variant.id
        log.info("expert.recalled", problem=Path(task.problem_path).name, variants=sorted(recalled.values()))
        return recalled

    def _rendered(self, task: AgentTask, program: ExpertProgram, offers: list[Offer], report: bool = True,
                  ) -> list[tuple[Offer, ExpertCandidate, list[str]]]:
        """Each offer rendered (with its notes on remembered configs); a variant that fails to
        render is reported (``report``) and skipped."""
        choices = task_choices(task, self.device)
        siblings = shape_siblings(task.problem_path, self.shape_set, choices.target)
        out: list[tuple[Offer, ExpertCandidate, list[str]]] = []
        for offer in offers:
            try:
                out.append((offer, *_remembering(task, program, offer, choices, siblings)))
            except Exception as exc:  # noqa: BLE001 - one variant's failure must not lose the others; reported
                if report:
                    self.last_errors.append(f"variant {offer.variant.id}: {type(exc).__name__}: {exc}"[:400])
                    log.warning("expert.render_failed", variant=offer.variant.id, error=repr(exc))
        return out

    def _render(self, task: AgentTask, program: ExpertProgram, offers: list[Offer], why: dict[str, str],
                ) -> list[Draft]:
        drafts: list[Draft] = []
        proposed = self._proposed[task.problem_path]
        for offer, c, remembered in self._rendered(task, program, offers):
            variant = offer.variant
            proposed[sha(c.source)] = variant.id
            notes = draft_notes(c, self.device) + ([why[variant.id]] if variant.id in why else []) + remembered
            drafts.append(Draft(agent=self.name, stage=task.stage, focus=task.focus, source=c.source,
                                structure=c.structure, principle_ids=c.principle_ids, notes=notes))
        log.info("expert.designed", problem=Path(task.problem_path).name, drafts=len(drafts),
                 variants=[o.variant.id for o in offers])
        return drafts


def _remembering(task: AgentTask, program: ExpertProgram, offer: Offer, choices: Choices,
                 siblings: list[ExpertProgram]) -> tuple[ExpertCandidate, list[str]]:
    """``offer`` rendered from the configs the memory remembers for problems like this one
    (:mod:`agents.expert.warm_start`), with a note per move that reached the kernels; the heuristic
    configs where it remembers nothing, where the template bounded every move back, or (said in
    the notes) where a remembered value does not render."""
    def plain() -> ExpertCandidate:
        return render(program, offer.variant, choices.target, siblings=siblings, pick=offer.pick,
                      principles=offer.principle_ids)

    overrides, applied = remembered_overrides(offer.variant, choices, offer.pick, task.tuning_strategies)
    if not applied:
        return plain(), []
    credit = [PRINCIPLE, *choices.target.credit(REMEMBERED_CONFIGS)]
    try:
        c = render(program, offer.variant, choices.target, overrides, siblings=siblings, pick=offer.pick,
                   principles=[*offer.principle_ids, *credit])
    except Exception as exc:  # noqa: BLE001 - a remembered value this template rejects: said, then without
        return plain(), [f"transition memory: its configs did not render here ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:160]}); the heuristic configs instead"]
    notes = notes_for(applied, c.config)
    return (c, notes) if notes else (plain(), [])
