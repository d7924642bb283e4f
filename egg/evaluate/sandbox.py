"""Defence in depth inside the runner: what the candidate's process may still do is narrowed.

None of this decides a verdict (the judge's checks do, in another process); it removes tools a
cheat needs and turns their use into a one-line error that names the candidate's line.

* :func:`restrict_writes` (Linux Landlock, where the kernel has it): the runner and everything it
  starts may write only under its scratch directory, the compiler caches and ``/dev``; it cannot
  rewrite the user's problem file or the judge's copy, bind or connect TCP sockets, or (ABI 6+)
  signal processes outside its sandbox (the judge, the harness). Reading stays allowed.
* :func:`forbid_new_sessions` (seccomp, x86-64 and arm64 Linux): no process of the runner may start a
  new session, so the judge's kill of the runner's session at the end of an evaluation
  (:mod:`egg.evaluate.runner_client`) reaches every process it started, native code's included;
  the judge then frees the buffers they mapped (:meth:`egg.evaluate.buffers.Arena.forget_consumers`).
* :func:`install_audit_hook` (``sys.addaudithook``, which cannot be removed): refuses the audited
  events that only a cheat needs when the candidate's own code causes them (sockets, processes,
  signals, ctypes, ``gc`` object scans, tracing, frames, opening raw file descriptors, and the
  ``object.__setattr__`` event CPython raises for rewriting a function's ``__code__`` or
  ``__defaults__``; plain class-attribute assignment raises no audit event, so patching a class is
  left to the static checks and, for what matters, to the judge comparing outputs itself).
* :func:`scrubbed_environment`: API keys and tokens are not passed to the candidate's process.
"""

from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Landlock (include/uapi/linux/landlock.h): syscall numbers are the same on every architecture.
_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446
_PATH_BENEATH = 1
_WRITE_FILE, _TRUNCATE, _REFER = 1 << 1, 1 << 14, 1 << 13
_WRITES_V1 = _WRITE_FILE | sum(1 << b for b in range(4, 13))  # remove dir/file, make char..sym
_NET_TCP = 1 | 2  # bind, connect
_SCOPE = 1 | 2  # abstract unix sockets, signals
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def restrict_writes(write_dirs: Iterable[str]) -> str:
    """Apply Landlock to this process; returns a one-line note of what was done (or why not)."""
    if not sys.platform.startswith("linux"):
        return "landlock: not applied (not Linux)"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return f"landlock: not applied (kernel: {os.strerror(ctypes.get_errno())})"
    fs = _WRITES_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(fs, _NET_TCP if abi >= 4 else 0, _SCOPE if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(_CREATE, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return f"landlock: not applied (create_ruleset: {os.strerror(ctypes.get_errno())})"
    allowed = []
    try:
        for d in dict.fromkeys(str(Path(p)) for p in write_dirs):
            if not os.path.exists(d):
                continue
            fd = os.open(d, os.O_PATH | os.O_CLOEXEC)
            try:
                rights = fs if os.path.isdir(d) else fs & (_WRITE_FILE | _TRUNCATE)
                rule = _PathBeneath(rights, fd)
                if libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), 0) == 0:
                    allowed.append(d)
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_RESTRICT, ruleset, 0) != 0:
            return f"landlock: not applied (restrict_self: {os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    extra = ", no TCP" if abi >= 4 else ""
    extra += ", no signals outside the sandbox" if abi >= 6 else ""
    return f"landlock ABI {abi}: writes only under {len(allowed)} directories{extra}"


# seccomp (include/uapi/linux/seccomp.h, filter.h): a classic-BPF filter over (nr, arch).
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 112, 317), "aarch64": (0xC00000B7, 157, 277)}  # audit arch, setsid, seccomp
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | 1
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_X32_BIT = 0x40000000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def forbid_new_sessions() -> str:
    """Refuse ``setsid`` (EPERM) in this process, all its threads and its children; returns a
    one-line note of what was done (or why not).

    A process that leaves the runner's session outlives the judge's kill of it; Python code cannot
    fork there (the audit hook), but a CUDA C++ candidate's native code could. Process groups stay
    allowed (ninja puts each compile in its own) and are killed with the session. Other syscall
    ABIs (i386's ``int 0x80``, x32) are refused whole: a native program could reach ``setsid``
    through them under other numbers, and nothing honest in the runner uses them."""
    arch = _SECCOMP_ARCH.get(os.uname().machine) if sys.platform.startswith("linux") else None
    if arch is None:
        return f"seccomp: not applied (no filter for {sys.platform} {os.uname().machine})"
    audit_arch, setsid, seccomp_nr = arch
    program = [
        _SockFilter(_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        _SockFilter(_JEQ, 0, 4, audit_arch),  # another ABI: refused
        _SockFilter(_LD_ABS, 0, 0, 0),  # seccomp_data.nr
        _SockFilter(_JGE, 2, 0, _X32_BIT),  # x32 numbers: refused
        _SockFilter(_JEQ, 1, 0, setsid),
        _SockFilter(_RET, 0, 0, _RET_ALLOW),
        _SockFilter(_RET, 0, 0, _RET_EPERM),
    ]
    filters = (_SockFilter * len(program))(*program)
    prog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"seccomp: not applied (no_new_privs: {os.strerror(ctypes.get_errno())})"
    # SECCOMP_SET_MODE_FILTER with TSYNC: every thread of the process (CUDA's and Triton's too)
    if libc.syscall(seccomp_nr, 1, 1, ctypes.byref(prog)) != 0:
        return f"seccomp: not applied ({os.strerror(ctypes.get_errno())})"
    return "seccomp: no new sessions (the judge's kill of the runner's session reaches every process it starts)"


_ANY_CALLER = frozenset({
    "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata",
    "ctypes.cdata/buffer", "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at", "ctypes.call_function",
    "sys._current_frames", "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "open",
})
_DIRECT_CALLER = frozenset({"sys._getframe", "sys._getframemodulename", "object.__setattr__", "object.__delattr__"})
_STDLIB = tuple(p for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p)


def _is_stdlib(filename: str) -> bool:
    return filename.startswith("<frozen") or filename.startswith(_STDLIB) and "site-packages" not in filename


def install_audit_hook(candidate_file: str, candidate_module: str, denials: list[str]) -> None:
    """Refuse cheat-only audited events caused by the candidate; each refusal is appended to ``denials``."""
    target = str(Path(candidate_file).resolve())
    busy = [False]

    def from_candidate(filename: str) -> bool:
        return filename == target or (filename.startswith("<") and not filename.startswith("<frozen"))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy[0] or (event not in _ANY_CALLER and event not in _DIRECT_CALLER):
            return
        if event == "open" and not (args and isinstance(args[0], int)):
            return  # only raw file descriptors: honest code opens files by path
        busy[0] = True
        try:
            frame = sys._getframe(1)
            if event in _DIRECT_CALLER:
                if frame.f_code.co_filename != target:
                    return
                if event.startswith("object.") and getattr(args[0], "__module__", None) == candidate_module:
                    return  # the candidate's own classes
            else:
                while frame is not None and _is_stdlib(frame.f_code.co_filename):
                    frame = frame.f_back
                if frame is None or not from_candidate(frame.f_code.co_filename):
                    return
            what = event if not event.startswith("object.") else f"{event} on {getattr(args[0], '__qualname__', '?')}"
            message = (f"egg runner refused {what} from the candidate "
                       f"({Path(frame.f_code.co_filename).name} line {frame.f_lineno})")
            denials.append(message)
        finally:
            busy[0] = False
        raise PermissionError(message)

    sys.addaudithook(hook)


_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def scrubbed_environment(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
