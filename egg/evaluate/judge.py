"""One evaluation, decided in the judge: correctness trials on every shape set, then timing.

The judge never imports the candidate. It builds the reference, draws every input, owns every
buffer the candidate reads or writes (:mod:`egg.evaluate.buffers`), and for each call of the
candidate (in its runner) it:

1. writes fresh values into the shared input buffers and keeps a private copy;
2. asks the runner to call the candidate and copy the outputs into the judge's output slots;
3. snapshots the slots into private memory (later writes change nothing), checks the input
   buffers against its private copy, the reported structure against the reference's (exact
   ``torch.Tensor`` leaves), aliasing against the reference's, and compares values.

Trials per shape set: ``trials`` calls with fresh values in the same buffers (a cache keyed by
pointer, shape, ``_version`` or object identity returns stale results), one call with the last
values written again (state that leaks between calls), one with freshly allocated buffers (state
baked to addresses). Every shape set the problem declares is checked unless the caller restricted
them. Timing, kernel ablation and the GPU-time split follow in :mod:`egg.evaluate.judge_timing`.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog
import torch

from egg.evaluate.anchor import exact_dtype, judge_against_exact
from egg.evaluate.buffers import Arena, fill_tree, layout, share_tree
from egg.evaluate.correctness import compare_outputs, inputs_unchanged, map_tensors, replace_tensors, structure_reason
from egg.evaluate.messages import Build, Call, JudgeJob, JudgeResult, Load, MapBuffers, RunnerDone, RunnerOk
from egg.evaluate.reference import Reference, input_bytes_read
from egg.evaluate.rejection import Rejected
from egg.evaluate.runner_client import RunnerHandle
from egg.evaluate.verdict import TrialResult
from egg.tolerance import resolve_tolerances

log = structlog.get_logger(__name__)


class Prepared:
    """The buffers of one input layout: input buffers, output slots, the reference structure."""

    def __init__(self, arena: Arena, inputs: list[Any], expected: Any) -> None:
        arena.begin_set()
        self.layout = layout(inputs)
        self.in_node, self.in_bufs = share_tree(inputs, arena)
        self.out_node, self.slots = share_tree(expected, arena)
        self.buffers = [b.spec for b in self.in_bufs + self.slots]


class Evaluation:
    def __init__(self, job: JudgeJob, ctx: Any) -> None:
        self.job, self.ctx = job, ctx
        self.device = ctx.device
        self.result = JudgeResult(transport=ctx.transport, isolation=list(ctx.isolation))
        self.tolerances = resolve_tolerances(job.tolerance)
        self.source, self.filename = ctx.problem_source(job)
        self.arena = Arena(self.device, ctx.transport)
        self.runner: RunnerHandle | None = None
        self.prepared: Prepared | None = None
        self.kernels: set[str] = set()
        self._peak = 0  # the judge's peak reserved device memory over the phases so far
        ctx.gpu.waited_s = 0.0

    # -- the whole evaluation --------------------------------------------------------------------
    def run(self) -> JudgeResult:
        from egg.evaluate import judge_timing

        if self.device.type == "cuda":  # the judge's own peak, for the harness (peak_device_bytes)
            self.result.start_device_bytes = torch.cuda.memory_reserved(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        torch.backends.cuda.matmul.allow_tf32 = self.job.flags.matmul_allow_tf32
        torch.backends.cudnn.allow_tf32 = self.job.flags.cudnn_allow_tf32
        try:
            # The GPU lock (egg.evaluate.gpu_lock): runner start and load (imports, CUDA builds) hold
            # nothing; trials, the reference's torch.compile and ablation share the GPU; every timed
            # phase has it to itself.
            gpu = self.ctx.gpu
            if self.job.reference_only:
                ref = self.reference(0)
                with gpu.shared(), self.phase("compile"):
                    judge_timing.compile_baseline(self, ref)
                with gpu.exclusive(), self.phase("baselines"):
                    judge_timing.time_baselines(self, ref)
                return self.result
            self.start_runner()
            first: Reference | None = None
            with gpu.shared(), self.phase("trials"):
                for index in range(len(self.job.shape_sets)):
                    ref = self.reference(index)
                    first = first or ref
                    self.build(index)
                    self.check_shape_set(index, ref)
            assert first is not None
            with gpu.shared(), self.phase("compile"):  # torch.compile outside the exclusive lock
                judge_timing.compile_baseline(self, first)
            with gpu.exclusive(), self.phase("timing"):
                if len(self.job.shape_sets) > 1:
                    self.build(0)
                judge_timing.time_candidate(self, first)
            with gpu.shared(), self.phase("ablation"):
                judge_timing.ablate(self, first)
            if self.device.type == "cuda" and self.job.gpu_time_split:
                with gpu.exclusive(), self.phase("profile"):
                    judge_timing.profile(self, first)
        except Rejected as rej:
            self.result.stage_failed, self.result.reasons = rej.stage, [rej.reason]
        finally:
            if self.ctx.gpu.path is not None:
                self.result.phase_s["gpu_wait"] = self.ctx.gpu.waited_s
            if self.runner is not None:
                self.runner.close()
                if self.runner.reaped:  # nobody maps the buffers now: their memory may go (buffers.Arena)
                    self.arena.forget_consumers()
                elif self.arena.counters:
                    self.result.notes.append(f"the runner's exit was not confirmed: {len(self.arena.counters)} "
                                             "shared buffers stay reserved in this judge")
            self.prepared = None
            self.arena.close()
            self.result.kernels_launched = sorted(self.kernels)
            if self.device.type == "cuda":
                self.result.peak_device_bytes = max(self._peak, torch.cuda.max_memory_reserved(self.device))
                self.result.device_total_bytes = torch.cuda.get_device_properties(self.device).total_memory
        return self.result

    def reference(self, index: int) -> Reference:
        name, overrides = self.job.shape_sets[index]
        if "BIND_PARAMETERS" in self.source:
            # A live-module problem loads the user's weights from a file next to it: built once per
            # judge, so a later change to that file cannot change what later candidates face.
            key = ("live", self.job.problem_sha256, name, self.job.flags.model_dump_json())
            return self.ctx.cached(key, lambda: Reference(self.source, self.filename, self.job.problem_name, name,
                                                          overrides, self.job.seed, self.device))
        return Reference(self.source, self.filename, self.job.problem_name, name, overrides, self.job.seed, self.device)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Seconds per phase, and on a GPU the judge's peak reserved memory per phase (the peak of
        the whole evaluation is the largest of them, so ``peak_device_bytes`` says how much and
        ``phase_peak_bytes`` which step)."""
        started = time.perf_counter()
        cuda = self.device.type == "cuda"
        if cuda:
            self._peak = max(self._peak, torch.cuda.max_memory_reserved(self.device))
            torch.cuda.reset_peak_memory_stats(self.device)
        try:
            yield
        finally:
            self.result.phase_s[name] = time.perf_counter() - started
            if cuda:
                peak = torch.cuda.max_memory_reserved(self.device)
                self.result.phase_peak_bytes[name] = max(peak, self.result.phase_peak_bytes.get(name, 0))
                self._peak = max(self._peak, peak)

    def start_runner(self) -> None:
        scratch = tempfile.mkdtemp(prefix="runner-", dir=self.ctx.scratch_root)
        request = {"device": str(self.device), "log_path": self.job.log_path or "/dev/null", "scratch": scratch,
                   "write_dirs": self.ctx.write_dirs(scratch, self.arena.root, self.job.build_dir)}
        with self.phase("runner_start"):
            self.runner = RunnerHandle(self.ctx.zygote, request, self.job.timeout_s, self.job.build_timeout_s)
        self.result.isolation += self.runner.isolation
        with self.phase("load"):
            loaded = self.runner.request(Load(candidate_path=self.job.candidate_path, problem_source=self.source,
                                          problem_name=self.job.problem_name, device=str(self.device),
                                              flags=self.job.flags, build_dir=self.job.build_dir), RunnerOk)
        assert isinstance(loaded, RunnerOk)
        self.result.isolation += loaded.notes

    def build(self, index: int) -> None:
        name, overrides = self.job.shape_sets[index]
        assert self.runner is not None
        self.runner.request(Build(shape_set=name, overrides=overrides, seed=self.job.seed), RunnerOk)

    # -- buffers ---------------------------------------------------------------------------------
    def prepare(self, inputs: list[Any], expected: Any, fresh: bool = False) -> Prepared:
        """Buffers for this input layout (new ones when ``fresh`` or the layout changed)."""
        if fresh or self.prepared is None or self.prepared.layout != layout(inputs):
            # The new set is allocated while the old one is still held, so its addresses are new;
            # the old one is released once the runner maps the new one (only one set is alive in a
            # trial: a KernelBench problem's set is 10-20 GB on the device).
            old, self.prepared = self.prepared, Prepared(self.arena, inputs, expected)
            assert self.runner is not None
            self.runner.request(MapBuffers(buffers=self.prepared.buffers, outputs=self.prepared.out_node), RunnerOk)
            if old is not None:
                self.arena.release(old.in_bufs + old.slots)
                del old
                self.arena.end_previous_set()
        return self.prepared

    def call(self, mode: str, index: int, inputs: list[Any], expected: Any) -> tuple[RunnerDone, list[torch.Tensor]]:
        """Write ``inputs`` into the buffers, have the runner call, snapshot the slots. ``expected``
        (the outputs' layout) may be None once buffers of ``inputs``' layout exist."""
        if expected is None:
            assert self.prepared is not None and self.prepared.layout == layout(inputs)
        prepared = self.prepare(inputs, expected)
        node = fill_tree(inputs, prepared.in_bufs)
        self.sync()
        assert self.runner is not None
        started = time.perf_counter()
        done = self.runner.request(Call(mode=mode, index=index, inputs=node), RunnerDone)  # type: ignore[arg-type]
        # The first call compiles (Triton JIT, autotuning): its own entry, inside "trials".
        self.result.phase_s.setdefault("first_call", time.perf_counter() - started)
        assert isinstance(done, RunnerDone)
        snapshots = [buf.snapshot() for buf in prepared.slots]
        self.sync()
        self.kernels.update(done.launches)
        return done, snapshots

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # -- checks ----------------------------------------------------------------------------------
    def verdict_of_call(self, done: RunnerDone, snapshots: list[torch.Tensor], inputs: list[Any], expected: Any,
                        ref_aliases: list[tuple[int, int]], where: str, launches: bool = True) -> tuple[bool, Any, str | None]:
        """(ok, comparison, reason) for one call; a reason that is not a value mismatch raises."""
        if done.side_stream:
            raise Rejected("correctness", f"kernel {done.side_stream[0]} was launched on a stream other than the "
                           "caller's: work on a side stream escapes the timer")
        if done.output is None:
            raise Rejected("crash", "the candidate's process reported no output structure")
        if reason := structure_reason(expected, done.output):
            return False, None, f"{where}: {reason}"
        changed = self.inputs_changed(inputs)
        if changed:
            raise Rejected("correctness", f"{where}: {changed}")
        extra = sorted(set(map(tuple, done.aliases)) - set(ref_aliases))
        if extra:
            i, j = extra[0]
            raise Rejected("correctness", f"{where}: output tensor {i} shares memory with input {j} (the candidate "
                           "returned an input or a view of one; the reference's output does not)")
        cmp = compare_outputs(expected, replace_tensors(expected, snapshots), self.tolerances)
        if cmp.ok and launches and sum(done.launches.values()) == 0:
            raise Rejected("correctness", "no generated (Triton/CUDA) kernel launched during forward: "
                           "the candidate is plain PyTorch")
        return cmp.ok, cmp, None if cmp.ok else f"{where}: {cmp.reason}"

    def fp32_route(self, ref: Reference, inputs: list[Any], expected: Any, snaps: list[torch.Tensor],
                   done: RunnerDone, reason: str | None, detail: str | None) -> tuple[bool, str | None, str | None]:
        """A value mismatch against eager, judged again against an exact run of the reference (fp64
        where an output is fp32, else fp32: :mod:`egg.evaluate.anchor`): (ok, reason, detail)."""
        flags = self.job.flags
        exact = fp32 = None
        no_fp64 = ""
        try:
            fp32 = ref.run_exact(inputs, torch.float32)  # fp32 rounding's level, or the exact run itself
            if exact_dtype(expected, self.tolerances) == torch.float64:
                try:
                    exact = ref.run_exact(inputs, torch.float64)
                except Exception as exc:  # noqa: BLE001 - e.g. an op with no fp64 kernel: said in the verdict
                    no_fp64 = f" (no fp64 run of the reference: {type(exc).__name__}: {str(exc)[:120]}; fp32 run used)"
            if exact is None:  # 16-bit outputs only, or no fp64 form: the fp32 run is exact, eager its own level
                exact, fp32 = fp32, None
            allowed = (flags.cudnn_allow_tf32, flags.matmul_allow_tf32)
            tf32 = ref.run_exact(inputs, torch.float32, allowed) if self.device.type == "cuda" and any(allowed) else None
        except Exception as exc:  # noqa: BLE001 - a reference with no exact form keeps eager's verdict
            return False, f"{reason} (no fp32 run of the reference: {type(exc).__name__}: {exc})", detail
        got = replace_tensors(expected, snaps)
        anchored = judge_against_exact(expected, got, exact, self.tolerances, tf32=tf32, fp32=fp32)
        if not anchored.ok:
            return False, f"{reason}; fp32 route: {anchored.reason}{no_fp64}", detail
        if sum(done.launches.values()) == 0:
            raise Rejected("correctness", "no generated (Triton/CUDA) kernel launched during forward: "
                           "the candidate is plain PyTorch")
        note = f"differs from eager beyond tolerance ({reason}); accepted as accurate as eager: {anchored.note}{no_fp64}"
        if not any(n.startswith("fp32 route:") for n in self.result.notes):
            self.result.notes.append(f"fp32 route: {note}")
        return True, None, f"{detail}; {note}" if detail else note

    def inputs_changed(self, inputs: list[Any]) -> str | None:
        """Each input buffer against the judge's private copy, a piece at a time (a snapshot of an
        input would be one more copy of it at the evaluation's peak)."""
        assert self.prepared is not None
        bufs = self.prepared.in_bufs
        return inputs_unchanged(inputs, lambda i: bufs[i].tensor)

    def trial(self, ref: Reference, seed: int, inputs: list[Any], expected: Any, aliases: list[tuple[int, int]],
              detail: str | None = None) -> RunnerDone:
        name = ref.shape_set
        done, snaps = self.call("trial", seed, inputs, expected)
        ok, cmp, reason = self.verdict_of_call(done, snaps, inputs, expected, aliases, f"shape set '{name}', seed {seed}")
        if not ok and cmp is not None and self.job.fp32_route:
            ok, reason, detail = self.fp32_route(ref, inputs, expected, snaps, done, reason, detail)
        self.result.trials.append(TrialResult(shape_set=name, seed=seed, passed=ok,
                                              max_abs_err=cmp.max_abs if cmp else None,
                                              max_rel_err=cmp.max_rel if cmp else None,
                                              detail=reason or detail))
        if not ok:
            raise Rejected("correctness", reason or f"shape set '{name}', seed {seed}: wrong output")
        return done

    def check_shape_set(self, index: int, ref: Reference) -> None:
        name = ref.shape_set
        base = self.job.seed + 1000 * (index + 1)
        inputs = expected = aliases = None
        for t in range(self.job.trials):
            # the last trial's values go first: a KernelBench problem's tensors are 4-8 GB each on the
            # device, and the judge holds them beside its buffers and a neighbour judge's (judge_slots)
            inputs = expected = None
            inputs = ref.inputs(base + t)
            if index == 0 and t == 0:  # the timed shape set's floor, while no buffer exists yet
                self.read_bytes(ref, inputs)
            expected, aliases = ref.run(inputs)
            self.trial(ref, base + t, inputs, expected, aliases)
        # The last values written again: a result depending on earlier calls (accumulated state) differs.
        done = self.trial(ref, base + self.job.trials - 1, inputs, expected, aliases or [], "the same values again")
        if index == 0:
            self.result.launches_per_call = sum(done.launches.values())
        # New buffers (new addresses): state tied to the buffers' addresses is stale. They are made
        # for the last trial's layout before the new values exist, and the old set goes back before
        # those are made: the old set, the new one and a set of values at once held one copy of the
        # problem's tensors more than the trials need.
        shapes = map_tensors((inputs, expected), _meta)
        inputs = expected = None
        self.trim()
        self.prepare(shapes[0], shapes[1], fresh=True)
        del shapes
        self.trim()
        inputs = ref.inputs(base + 501)
        expected, aliases = ref.run(inputs)
        self.trial(ref, base + 501, inputs, expected, aliases, "freshly allocated buffers")
        del inputs, expected
        self.trim()

    def read_bytes(self, ref: Reference, inputs: list[Any]) -> tuple[int, str | None]:
        """The input bytes of the physics floor (:func:`egg.evaluate.reference.input_bytes_read`), once
        per judge, problem, shape set and flags: an autograd pass costs about three more copies of
        the inputs and outputs, so it runs before any buffer of the evaluation exists."""
        key = ("bytes", self.job.problem_sha256, ref.shape_set, self.job.flags.model_dump_json())
        return self.ctx.cached(key, lambda: input_bytes_read(ref.model, inputs))

    def trim(self) -> None:
        """Give cached free device memory back between phases: the runner and a neighbour judge
        allocate from the same device, and blocks this judge cached for its last phase are of no use
        to them (nor to the buffers, which come from their own pools)."""
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def _meta(t: torch.Tensor) -> torch.Tensor:
    """A tensor's layout without its values (what :class:`Prepared` reads)."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_problem(path: str, sha: str) -> str:
    data = Path(path).read_bytes()
    if sha256_of(data) != sha:
        raise Rejected("crash", f"the judge's copy of the problem ({Path(path).name}) does not match the hash the "
                       "harness recorded: it was changed on disk; nothing was evaluated")
    return data.decode("utf-8")

