"""Static anti-cheat checks: every cheat fixture is caught by its rule, honest code passes clean,
and each rule sees through aliases, from-imports and setattr."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from egg.evaluate.static_checks import Finding, check_candidate_source, detect_backend

CANDIDATES = Path(__file__).parents[1] / "fixtures" / "candidates"
CHEATS = CANDIDATES / "cheats"
HONEST = CANDIDATES / "honest"

CHEAT_RULES = {
    "patch_timer": "patch",
    "thread_launch": "concurrency",
    "side_stream": "stream",
    "try_fallback": "fallback",
    "global_cache": "global-cache",
    "self_cache": "global-cache",
    "lru_cache": "global-cache",
    "tf32_enable": "patch",
    "gc_scan": "introspection",
}

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"


def rules(source: str) -> set[str]:
    return {f.rule for f in check_candidate_source(textwrap.dedent(source))}


def findings(source: str) -> list[Finding]:
    return check_candidate_source(textwrap.dedent(source))


def test_every_cheat_fixture_has_a_test_and_vice_versa() -> None:
    assert {p.stem for p in CHEATS.glob("*.py")} == set(CHEAT_RULES)
    assert len(list(HONEST.glob("*.py"))) == 7


@pytest.mark.parametrize(("name", "rule"), sorted(CHEAT_RULES.items()))
def test_cheat_fixture_is_caught_by_its_rule(name: str, rule: str) -> None:
    found = check_candidate_source((CHEATS / f"{name}.py").read_text(), f"{name}.py")
    assert rule in {f.rule for f in found}, [f.reason() for f in found]
    for f in found:
        assert f.line > 0 and "\n" not in f.reason()
        assert f.reason().startswith(f"static check '{f.rule}' (line {f.line}): ")


@pytest.mark.parametrize("path", sorted(HONEST.glob("*.py")), ids=lambda p: p.stem)
def test_honest_fixture_has_no_finding(path: Path) -> None:
    assert check_candidate_source(path.read_text(), path.name) == []


@pytest.mark.parametrize(
    ("path", "backend"),
    [(CHEATS / f"{name}.py", "triton") for name in sorted(CHEAT_RULES)]
    + [
        (HONEST / "fused_add_relu.py", "triton"),
        (HONEST / "autotune_heuristics.py", "triton"),
        (HONEST / "helper_jit.py", "triton"),
        (HONEST / "cuda_load_inline.py", "cuda"),
        (CANDIDATES / "add_relu_triton.py", "triton"),
    ],
    ids=lambda v: v.stem if isinstance(v, Path) else v,
)
def test_detect_backend_on_fixtures(path: Path, backend: str) -> None:
    assert detect_backend(path.read_text()) == backend


@pytest.mark.parametrize(
    ("source", "backend"),
    [
        ("from triton import jit\n@jit\ndef k(x): pass\n", "triton"),
        ("import triton as tr\n@tr.autotune(configs=[], key=[])\n@tr.jit\ndef k(x): pass\n", "triton"),
        ("import torch.utils.cpp_extension as ce\nm = ce.load_inline('m', '')\n", "cuda"),
        ("from torch.utils.cpp_extension import load as build\nm = build('m', ['k.cu'])\n", "cuda"),
        ("from torch.utils import cpp_extension\nm = cpp_extension.load_inline('m', '')\n", "cuda"),
        ("import torch\ndef f(x): return torch.relu(x)\n", "pytorch"),
        ("def broken(:\n", "pytorch"),
    ],
)
def test_detect_backend_on_snippets(source: str, backend: str) -> None:
    assert detect_backend(source) == backend


def test_syntax_error_yields_no_finding() -> None:
    assert check_candidate_source("def f(:\n    pass\n") == []


def test_finding_points_at_the_right_line_and_names_the_target() -> None:
    (f,) = findings(
        """\
        import time

        x = 1
        time.perf_counter = lambda: 0.0
        """
    )
    assert (f.rule, f.line) == ("patch", 4)
    assert "time.perf_counter" in f.message


# -- patch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("import torch as T\nT.cuda.Event.elapsed_time = lambda s, e: 0.0\n", "torch.cuda.Event.elapsed_time"),
        ("from torch import cuda\ncuda.synchronize = lambda: None\n", "torch.cuda.synchronize"),
        ("from torch.cuda import Event\nEvent.elapsed_time = None\n", "torch.cuda.Event.elapsed_time"),
        ("import torch\nsetattr(torch.cuda, 'synchronize', print)\n", "torch.cuda"),
        ("import time\ndelattr(time, 'perf_counter')\n", "time"),
        ("import triton.testing\ntriton.testing.do_bench = lambda *a, **k: 0.001\n", "triton.testing.do_bench"),
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "lowering precision"),
        ("import torch\ntorch.set_float32_matmul_precision('high')\n", "lowering precision"),
        ("import builtins\nbuiltins.print = lambda *a: None\n", "modifies builtins"),
        ("__builtins__['len'] = lambda x: 0\n", "modifies builtins"),
        ("import egg.evaluate.timing as t\nt.median = min\n", "egg.evaluate.timing.median"),
        ("import os\nos.environ['TRITON_INTERPRET'] = '1'\n", "environment variable"),
        ("import torch\nEv = torch.cuda.Event\nEv.elapsed_time = None\n", "torch.cuda.Event.elapsed_time"),
        ("import torch\ndef f():\n    torch.cuda.synchronize = lambda: None\n", "torch.cuda.synchronize"),
        ("import math\nmath.pi += 1\n", "math.pi"),
        ("import sys\ndel sys.modules\n", "deletes sys.modules"),
    ],
)
def test_patch_rule(source: str, needle: str) -> None:
    hits = [f for f in findings(source) if f.rule == "patch"]
    assert hits and any(needle in f.message for f in hits), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nx = torch.ones(3)\nx.requires_grad = True\n",
        "import torch\nx = torch.float32\nx = torch.ones(3)\nx.requires_grad = True\n",
        "import torch\ntorch.set_float32_matmul_precision('highest')\n",
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0'\n",
        "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.ones(3))\n",
    ],
)
def test_patch_rule_leaves_honest_assignments_alone(source: str) -> None:
    assert "patch" not in rules(source)


# -- concurrency ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import threading\n",
        "from concurrent.futures import ThreadPoolExecutor\n",
        "import multiprocessing as mp\n",
        "import subprocess\n",
        "import asyncio\n",
        "import _thread\n",
        "import signal\n",
        "import torch.multiprocessing as tmp\n",
        "from os import fork\n",
        "import os\npid = os.fork()\n",
        "import os as o\no.system('nvidia-smi')\n",
        "import os\nos.popen('ls')\n",
        "import os\nos.spawnl(0, 'x')\n",
    ],
)
def test_concurrency_rule(source: str) -> None:
    assert "concurrency" in rules(source)


def test_concurrency_rule_ignores_plain_os_use() -> None:
    # `import os` itself is reported by the import rule (issue 16: file and descriptor access), but
    # os.path and cpu_count start no process
    assert rules("import os\nn = os.cpu_count()\np = os.path.join('a', 'b')\n") == {"import"}


# -- stream --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ns = torch.cuda.Stream()\n",
        "from torch.cuda import Stream\ns = Stream()\n",
        "import torch as T\nwith T.cuda.stream(None):\n    pass\n",
        "import torch\ntorch.cuda.set_stream(None)\n",
        "import torch\ns = torch.cuda.ExternalStream(0)\n",
        "import torch\ns = torch.Stream()\n",
        "import torch\ntorch.cuda.current_stream().wait_stream(other)\n",
        "s = make_side_stream()\nt = s.Stream()\n",
        'src = "cudaStream_t s; cudaStreamCreate(&s);"\n',
        'src = """\n__global__ void k() {}\nvoid f() { cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }\n"""\n',
        'src = "void f(cudaStream_t s) { k<<<g, b, 0, s>>>(); }"\n',
        'src = "k<<<dim3(a, b), 256, smem, my_stream>>>(p);"\n',
        "flags = ['--default-stream', 'per-thread']\n",
    ],
)
def test_stream_rule(source: str) -> None:
    assert "stream" in rules(source), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        'src = "k<<<blocks, threads>>>(x, n);"\n',
        'src = "k<<<blocks, threads, 0>>>(x, n);"\n',
        'src = "k<<<blocks, threads, 0, 0>>>(x, n);"\n',
        'src = "k<<<g, b, 0, at::cuda::getCurrentCUDAStream()>>>(x);"\n',
        'src = "k<<<g, b, smem, c10::cuda::getCurrentCUDAStream(x.device().index()).stream()>>>(x);"\n',
        'src = """\nauto stream = at::cuda::getCurrentCUDAStream();\nk<<<(n + 255) / 256, 256, 0, stream>>>(x);\n"""\n',
        "import torch\ns = torch.cuda.current_stream()\n",
    ],
)
def test_stream_rule_accepts_the_current_stream(source: str) -> None:
    assert "stream" not in rules(source), [f.reason() for f in findings(source)]


def test_stream_rule_reports_the_line_inside_a_cuda_string() -> None:
    source = 'import torch\nsrc = """\nint a;\nint b;\nvoid f() { cudaStreamCreate(&s); }\n"""\n'
    (f,) = [f for f in findings(source) if f.rule == "stream"]
    assert f.line == 5 and "cudaStreamCreate" in f.message


# -- fallback ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        # bare swallow around a Triton launch, outside forward
        HEADER + "def run(x, out):\n    try:\n        k[(1,)](x, out)\n    except Exception:\n        pass\n",
        # launch inside a helper, helper called in the try
        HEADER + "def launch(x, out):\n    k[(1,)](x, out)\n\ndef run(x, out):\n    try:\n        launch(x, out)\n"
        "    except RuntimeError:\n        out.copy_(x)\n",
        # the CUDA extension's function called in a try
        "from torch.utils.cpp_extension import load_inline\nimport torch.nn.functional as F\n"
        "ext = load_inline('e', '', functions=['f'])\n"
        "def run(x):\n    try:\n        return ext.f(x)\n    except Exception:\n        return F.relu(x)\n",
        # forward: the handler recomputes with torch (through an alias)
        "import torch as T\nclass ModelNew:\n    def forward(self, x):\n        try:\n            y = self.go(x)\n"
        "        except Exception:\n            y = T.relu(x)\n        return y\n",
        # forward: the handler returns a value
        "class ModelNew:\n    def forward(self, x):\n        try:\n            return self.fast(x)\n"
        "        except Exception:\n            return (x + 1).clamp_min(0)\n",
        # a build that may fail silently
        "from torch.utils.cpp_extension import load_inline\ntry:\n    ext = load_inline('e', '')\n"
        "except Exception:\n    ext = None\n",
        # contextlib.suppress around a launch
        HEADER + "import contextlib\ndef run(x):\n    with contextlib.suppress(Exception):\n        k[(1,)](x)\n",
    ],
)
def test_fallback_rule(source: str) -> None:
    assert "fallback" in rules(source), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        HEADER + "def run(x):\n    try:\n        k[(1,)](x)\n    except Exception as e:\n"
        "        raise RuntimeError('kernel failed') from e\n",
        HEADER + "def run(x):\n    try:\n        k[(1,)](x)\n    finally:\n        pass\n",
        "try:\n    import triton\nexcept ImportError:\n    triton = None\n",
    ],
)
def test_fallback_rule_allows_reraise_and_unrelated_try(source: str) -> None:
    assert "fallback" not in rules(source), [f.reason() for f in findings(source)]


def test_fallback_message_names_the_launch_and_what_the_handler_does() -> None:
    (f,) = [f for f in findings((CHEATS / "try_fallback.py").read_text()) if f.rule == "fallback"]
    assert "_add_relu_kernel[" in f.message and "torch.relu" in f.message


# -- global-cache --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "_out = None\ndef f(x):\n    global _out\n    _out = x\n    return _out\n",
        "_C = {}\ndef f(k, v):\n    _C[k] = v\n",
        "_C = []\ndef f(v):\n    _C.append(v)\n",
        "_C = {}\ndef f(k, v):\n    _C.setdefault(k, v)\n",
        "_C = {}\ndef f(k, v):\n    _C.update({k: v})\n",
        "_C = set()\ndef f(v):\n    _C.add(v)\n",
        "class S: pass\n_state = S()\ndef f(v):\n    _state.last = v\n",
        "import functools\n@functools.lru_cache(maxsize=None)\ndef f(n): return n\n",
        "from functools import cache\n@cache\ndef f(n): return n\n",
        "from functools import lru_cache as memo\n@memo()\ndef f(n): return n\n",
        "class M:\n    def forward(self, x):\n        self.last = x\n        return x\n",
        "class M:\n    def forward(self, x):\n        self.memo[x.shape] = x\n        return x\n",
        "class M:\n    def forward(self, x):\n        self.calls += 1\n        return x\n",
        "class M:\n    def forward(self, x):\n        self.memo.update(k=x)\n        return x\n",
        "class M:\n    def forward(self, x):\n        setattr(self, 'last', x)\n        return x\n",
        # state written in a helper that forward reaches through self.<name>()
        "class M:\n    def forward(self, x):\n        return self._run(x)\n    def _run(self, x):\n"
        "        self.last = x\n        return x\n",
    ],
)
def test_global_cache_rule(source: str) -> None:
    assert "global-cache" in rules(source), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        # lazy build of the CUDA extension through `global`
        "from torch.utils.cpp_extension import load_inline\n_ext = None\ndef get():\n    global _ext\n"
        "    if _ext is None:\n        _ext = load_inline('e', '')\n    return _ext\n",
        # ... through a builder function, and on self in forward
        "from torch.utils.cpp_extension import load_inline\n_ext = None\ndef _build():\n"
        "    return load_inline('e', '')\ndef get():\n    global _ext\n    _ext = _build()\n    return _ext\n"
        "class M:\n    def forward(self, x):\n        if self.ext is None:\n            self.ext = load_inline('e', '')\n"
        "        return self.ext.f(x)\n",
        # a local that shadows a module-level name, and reads of module-level constants
        "out = {}\nBLOCKS = {'a': 128}\ndef f(x):\n    out = {}\n    out['a'] = x\n    return out, BLOCKS['a']\n",
        # __init__ may set anything on self
        "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.cache = {}\n        self.cache['k'] = 1\n",
    ],
)
def test_global_cache_rule_allows_lazy_builds_and_locals(source: str) -> None:
    assert "global-cache" not in rules(source), [f.reason() for f in findings(source)]


# -- introspection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import gc\n",
        "import inspect\n",
        "from ctypes import CDLL\n",
        "import importlib\n",
        "import sys\nf = sys._getframe(1)\n",
        "import sys\nm = sys.modules['__main__']\n",
        "from sys import modules\nm = modules['__main__']\n",
        "t = __import__('torch')\n",
        "eval('1 + 1')\n",
        "exec('x = 1')\n",
        "code = compile('1', 'f', 'eval')\n",
        "data = open('/tmp/ref.pt', 'rb').read()\n",
        "import pathlib\nt = pathlib.Path('ref.txt').read_text()\n",
        "import torch\nref = torch.load('ref.pt')\n",
        "def f():\n    return f.__globals__\n",
        "import torch\nx = torch.Tensor.__subclasses__()\n",
        "def f(tb):\n    return tb.tb_frame.f_back.f_locals\n",
    ],
)
def test_introspection_rule(source: str) -> None:
    assert "introspection" in rules(source), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nm = torch.compile(lambda x: x)\n",
        "def open(p):\n    return p\nopen('x')\n",
        "import sys\nv = sys.version_info\n",
    ],
)
def test_introspection_rule_ignores_lookalikes(source: str) -> None:
    assert "introspection" not in rules(source), [f.reason() for f in findings(source)]


def test_honest_kernel_idioms_produce_no_finding() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline

        BLOCK = 1024
        _ext = load_inline("e", "", cuda_sources="k<<<g, b>>>(p);", functions=["f"])


        @triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            acc += tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, acc, mask=offs < n)


        class ModelNew(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(n))
                self.register_buffer("scale", torch.ones(1))

            def forward(self, x):
                out = torch.empty_like(x)
                grid = (triton.cdiv(x.numel(), BLOCK),)
                k[grid](out, x.numel(), BLOCK=BLOCK)
                y = _ext.f(out)
                return y * self.weight
        """
    )
    assert check_candidate_source(source) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "import torch\nfast = torch.compile(lambda x: x.relu())\n",
        "from torch._inductor import config\n",
        "import torch._dynamo as dynamo\n",
        "import torch as T\nclass ModelNew(T.nn.Module):\n    def forward(self, x):\n        return T.compile(T.relu)(x)\n",
    ],
)
def test_library_compiler_inside_a_candidate_is_flagged(snippet):
    rules = {f.rule for f in check_candidate_source(snippet)}
    assert "library-compiler" in rules


# -- the widened rules (issue 16) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "rule", "needle"),
    [
        ("import egg.evaluate.correctness as c\n", "import", "evaluator's own code"),
        ("from egg.evaluate import timing\n", "import", "egg.evaluate"),
        ("import os\nos.write(5, b'x')\n", "import", "descriptor"),
        ("import io\n", "import", "file"),
        ("import socket\n", "import", "sockets"),
        ("import pickle\n", "import", "deserialises"),
        ("import weakref\n", "import", "object"),
        ("import builtins\n", "import", "builtins"),
        ("import traceback\n", "import", "stack"),
        ("run = exec\nrun('x = 1')\n", "introspection", "holds exec"),
        ("import builtins\nbuiltins.exec(builtins.compile('1', 'f', 'exec'))\n", "introspection", "builtins.exec"),
        ("f = getattr(__builtins__, 'ex' + 'ec')\n", "introspection", "__builtins__"),
        ("imp = __builtins__['__import__']\n", "introspection", "__builtins__"),
        ("g = globals()\n", "introspection", "calls globals"),
        ("def f():\n    pass\nc = f.__code__\n", "introspection", "__code__"),
        ("import torch\nd = torch.__dict__['relu']\n", "introspection", "torch.__dict__"),
        ("import traceback\ns = traceback.extract_stack()\n", "introspection", "traceback.extract_stack"),
        ("import torch\nop = getattr(torch, 'rs' + 'qrt')\n", "computed-attr", "torch"),
        ("import torch\nname = 'Str' + 'eam'\ns = getattr(torch.cuda, name)()\n", "computed-attr", "torch.cuda"),
        ("import sys\nm = getattr(sys, ''.join(['mod', 'ules']))\n", "computed-attr", "sys"),
        ("import torch\ndef f(x, op='relu'):\n    return getattr(torch, op)(x)\n", "computed-attr", "torch"),
        ("import torch\ntype.__setattr__(torch.Tensor, 'sub', None)\n", "patch", "type.__setattr__"),
        ("import torch\nobject.__setattr__(torch.nn.functional, 'relu', None)\n", "patch", "object.__setattr__"),
        ("import torch\nclass T(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
         "        return 0\n", "subclass", "__torch_function__"),
        ("def f(x, Lie):\n    return x.as_subclass(Lie)\n", "subclass", "as_subclass"),
        ("def make():\n    last = None\n    def f(x):\n        nonlocal last\n        last = x\n        return last\n"
         "    return f\n", "global-cache", "nonlocal"),
        ("def forward(self, x, _memo={}):\n    return x\n", "global-cache", "mutable default"),
        ("def forward(self, x, memo=dict()):\n    return x\n", "global-cache", "mutable default"),
        ("class M:\n    def forward(self, x):\n        type(self).memo[x.shape] = x\n        return x\n",
         "global-cache", "on the class"),
        ("class M:\n    memo = {}\n    def forward(self, x):\n        M.memo.update(a=x)\n        return x\n",
         "global-cache", "class state"),
        ("class M:\n    def forward(self, x):\n        self.__class__.last = x\n        return x\n",
         "global-cache", "state kept"),
        ("def f(x):\n    return (x.data_ptr(), x._version)\n", "global-cache", "_version"),
        ("import operator\nC = {}\ndef f(k, v):\n    operator.setitem(C, k, v)\n", "global-cache", "operator.setitem"),
        ("class M:\n    def forward(self, x):\n        self.out.copy_(x)\n        return self.out.clone()\n",
         "global-cache", "in place"),
    ],
)
def test_widened_rules(source: str, rule: str, needle: str) -> None:
    hits = [f for f in findings(source) if f.rule == rule]
    assert hits and any(needle in f.message for f in hits), [f.reason() for f in findings(source)]


@pytest.mark.parametrize(
    "source",
    [
        # a dtype chosen by the problem's constructor arguments
        "import torch\nclass M:\n    def __init__(self, n, dtype):\n        self.w = torch.ones(n, dtype=getattr(torch, dtype))\n",
        "import torch\nclass M:\n    def forward(self, x):\n        return getattr(self, 'w')\n",
        "class M:\n    def forward(self, x, i):\n        return getattr(self, f'w{i}')\n",
        "import math\nimport operator\nimport functools\nn = functools.reduce(operator.mul, (2, 3), 1)\n",
        "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('acc', torch.zeros(3))\n        self.acc.fill_(1.0)\n",
        "class M:\n    def forward(self, x):\n        out = x.new_empty(x.shape)\n        out.copy_(x)\n        return out\n",
        "def f(x, block=128, flags=()):\n    return x\n",
        "class M:\n    def __init__(self):\n        object.__setattr__(self, 'x', 1)\n",
    ],
)
def test_widened_rules_leave_honest_code_alone(source: str) -> None:
    assert check_candidate_source(textwrap.dedent(source)) == [], [f.reason() for f in findings(source)]
