"""Expert agents: the Agent protocol played with the codegen and its templates instead of an LLM.

* :class:`ExpertDesigner` (stage 1, focus structure): one Draft per structural variant of
  :func:`agents.expert.design.analyse` in round 1; later rounds have nothing new (AgentExhausted).
* :class:`ExpertTuner` (stage 2; one per focus): re-renders an expert-generated parent with other
  values of the parameters its focus owns (:mod:`agents.expert.tuning`). On a GPU the graph
  measures every draft, so it offers a few configs ordered by the heuristic; on CPU (the
  interpreter: timings mean nothing) exactly one, labelled as such.

Neither raises for a problem it cannot handle: it returns no draft and says why in
``last_errors`` (the graph reports those); every draft names the compute ops left to torch.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import structlog

from agents.expert.decline import ExpertDecline
from agents.expert.design import ExpertCandidate, ExpertProgram, analyse, read_config, render, siblings_of
from agents.expert.tuning import FOCUS_PRINCIPLES, Move, moves
from agents.protocol import AgentExhausted, AgentTask, Draft
from egg.vocabulary import Backend, Focus
from principles import PackSet, load_packs

log = structlog.get_logger(__name__)

GPU_CONFIGS = 2  # per focus and parent: the graph measures each; more rounds beat more breadth
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


def _known(ids: list[str]) -> list[str]:
    """Only ids the loaded packs define (a renamed principle must not leak into a draft)."""
    packs = _packs()
    return [i for i in dict.fromkeys(ids) if packs.get(i) is not None] if packs is not None else list(ids)


@functools.lru_cache(maxsize=1)
def _packs() -> PackSet | None:
    try:
        return load_packs()
    except Exception as exc:  # noqa: BLE001 - principle ids are decoration, not correctness
        log.warning("expert.packs_unavailable", error=repr(exc))
        return None


def _notes(c: ExpertCandidate, device: str) -> list[str]:
    notes = [f"variant {c.variant}: {c.kernels} generated kernel launch(es) per call"]
    notes.append(f"kept in torch: {', '.join(c.torch_ops)}" if c.torch_ops else "no compute op left in torch")
    if device == "cpu":
        notes.append(CPU_NOTE)
    return notes


class ExpertDesigner:
    """Stage 1: one Draft per structural variant (fused, Triton matmul, less fused)."""

    def __init__(self, device: str = "auto", backend: Backend = Backend.TRITON, name: str = "expert-designer",
                 shape_set: str = "default") -> None:
        self.name = name
        self.shape_set = shape_set
        self.device = resolve_device(device)
        self.backend = backend
        self.last_errors: list[str] = []
        self._proposed: set[str] = set()

    def propose(self, task: AgentTask) -> list[Draft]:
        self.last_errors = []
        if Backend.CUDA in (task.backend, self.backend):
            self.last_errors = [CUDA_DECLINE]
            return []
        if task.round > 1 or task.problem_path in self._proposed:
            raise AgentExhausted("the expert designer proposed every structure it knows in round 1")
        self._proposed.add(task.problem_path)
        try:
            program = program_for(task.problem_path, self.shape_set)
        except ExpertDecline as exc:
            self.last_errors = [f"expert declined: {exc}"]
            log.info("expert.declined", problem=Path(task.problem_path).name, reason=str(exc))
            return []
        drafts: list[Draft] = []
        siblings = _siblings(task.problem_path, self.shape_set)
        for variant in program.variants:
            try:
                c = render(program, variant, self.device, siblings=siblings)
            except Exception as exc:  # noqa: BLE001 - one variant's failure must not lose the others; reported
                self.last_errors.append(f"variant {variant.id}: {type(exc).__name__}: {exc}"[:400])
                log.warning("expert.render_failed", variant=variant.id, error=repr(exc))
                continue
            drafts.append(Draft(agent=self.name, stage=task.stage, focus=task.focus, source=c.source,
                                structure=c.structure, principle_ids=_known(c.principle_ids),
                                notes=_notes(c, self.device)))
        log.info("expert.designed", problem=Path(task.problem_path).name, drafts=len(drafts))
        return drafts


class ExpertTuner:
    """Stage 2: re-render an expert parent with other values of this focus's parameters."""

    def __init__(self, focus: Focus, device: str = "auto", backend: Backend = Backend.TRITON,
                 name: str | None = None, shape_set: str = "default") -> None:
        short = {Focus.PARALLEL_MAPPING: "mapping", Focus.TILING: "tiling", Focus.MEMORY: "memory"}
        self.shape_set = shape_set
        self.focus = focus
        self.name = name or f"expert-{short.get(focus, focus.value)}"
        self.device = resolve_device(device)
        self.backend = backend
        self.last_errors: list[str] = []
        # Bodies already proposed or refined in this run: round 2 must not re-propose round 1's
        # parent (a move back to the old value) or a sibling's config.
        self._seen: set[str] = set()

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
        except ExpertDecline as exc:
            self.last_errors = [f"expert declined: {exc}"]
            return []
        current = config.by_kernel()
        limit = GPU_CONFIGS if self.device == "cuda" else 1
        self._seen.add(_body(parent.source))
        drafts: list[Draft] = []
        siblings = _siblings(task.problem_path, config.shape_set) if config.specialised[1:] else []
        for move in moves(variant, current, self.focus, self.device):
            overrides = {k: dict(v) for k, v in current.items()}
            overrides.setdefault(move.kernel, {})[move.param] = move.new
            try:
                c = render(program, variant, self.device, overrides, siblings=siblings)
            except Exception as exc:  # noqa: BLE001 - a config the template rejects: try the next one
                log.debug("expert.tuner_config_failed", move=move.text(), error=repr(exc))
                continue
            body = _body(c.source)
            if body in self._seen:
                continue  # the change does not reach the code
            self._seen.add(body)
            drafts.append(self._draft(task, c, move, len(drafts) + 1))
            if len(drafts) >= limit:
                break
        if not drafts:
            self.last_errors = [f"no {self.focus.value} parameter of this candidate's kernels can change the code"]
        return drafts

    def _draft(self, task: AgentTask, c: ExpertCandidate, move: Move, rank: int) -> Draft:
        notes = [f"{self.focus.value}: {move.text()}", *_notes(c, self.device)[1:2]]
        notes.append(CPU_NOTE if self.device == "cpu" else
                     f"config {rank} of up to {GPU_CONFIGS}, ordered by heuristic; the harness measures each")
        assert task.parent is not None
        return Draft(agent=self.name, stage=task.stage, focus=self.focus, source=c.source,
                     structure=f"{c.structure} [{move.text()}]"[:400],
                     principle_ids=_known(c.principle_ids + FOCUS_PRINCIPLES.get(self.focus, [])),
                     parent_id=task.parent.id, notes=notes)


def _body(source: str) -> str:
    """The source without its leading comment header (where only the config text differs)."""
    lines = source.splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        i += 1
    return "\n".join(lines[i:])
