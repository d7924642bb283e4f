"""Session-local: the GEMM kernel of several renders of one problem, back to back (not the judge)."""
import json, sys, torch
sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks")
from egg.problem import import_file, load_problem_module
from host_bound import measure
problem = load_problem_module(sys.argv[1])
torch.manual_seed(0)
init = problem.get_init_inputs()
inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
for i, path in enumerate(sys.argv[2:]):
    cand = import_file(path, f"cand{i}")
    model = cand.ModelNew(*init).cuda()
    with torch.no_grad():
        row = measure(model, inputs, 10, kernels=2)
    row["candidate"] = path
    print(json.dumps(row), flush=True)
    del model
    torch.cuda.empty_cache()
