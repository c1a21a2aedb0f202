"""Instruction counts, with valgrind's callgrind: numbers that repeat on a busy machine.

Wall-clock ratios move by several percent when another process shares the
machine; the number of instructions a step executes does not (it repeats to
about 0.1%). Each count here runs the step ``n`` and ``2n`` times in two fresh
processes under ``valgrind --tool=callgrind`` (one BLAS thread) and divides the
difference by ``n``, so that start-up, imports and warm-up cancel out.

Measured:
* one training step (``cases.make_step``): tiny and small, hand-written NumPy,
  minigrad and PyTorch (when installed), float64;
* building the graph of the 10^4-op chain (``cases.make_chain``): instructions
  per op for minigrad and PyTorch, and backward through it per op;
* bytes per graph node of that chain (tracemalloc; no valgrind needed), and
  the small step's peak memory for minigrad (tracemalloc) beside PyTorch's own
  accounting of its tensors' storage.

``python benchmarks/instructions.py`` prints a table; ``run.py --instructions``
adds it to RESULTS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, ROOT)

_SNIPPET = r"""
import sys, json
sys.path.insert(0, {here!r}); sys.path.insert(1, {root!r})
import cases
kind, arg, n = {kind!r}, {arg!r}, {n}
if kind == "step":
    impl, size = arg
    f = cases.make_step(impl, size)
    for _ in range(5):
        f()
    for _ in range(n):
        f()
else:
    lib, phase, ops = arg
    forward, backward = cases.make_chain(lib, ops)
    backward(forward())
    if phase == "build":
        for _ in range(n):
            forward()
    else:
        outs = [forward() for _ in range(n)]
        for o in outs:
            backward(o)
"""


def available() -> bool:
    return shutil.which("valgrind") is not None


def _instructions(kind: str, arg, n: int) -> int:
    code = _SNIPPET.format(here=HERE, root=ROOT, kind=kind, arg=arg, n=n)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"callgrind run failed: {out.stderr[-2000:]}")
    for line in out.stderr.splitlines():
        if "Collected" in line:
            return int(line.split()[-1].replace(",", ""))
    raise RuntimeError("callgrind printed no instruction count")


def per_call(kind: str, arg, n: int) -> float:
    """Instructions per repetition: (count of 2n - count of n) / n."""
    return (_instructions(kind, arg, 2 * n) - _instructions(kind, arg, n)) / n


def node_bytes(ops: int = 10_000) -> float:
    """Bytes a graph node of the chain costs in minigrad (tracemalloc, everything it allocates)."""
    import tracemalloc

    import cases

    forward, _ = cases.make_chain("minigrad", ops)
    forward()
    tracemalloc.start()
    out = forward()
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return size / ops


def peak_memory_small() -> dict:
    """Peak bytes a small step allocates beyond what exists before it (parameters, data).

    minigrad's by tracemalloc. PyTorch's CPU allocator is not seen by
    tracemalloc, so its figure is the largest total storage of the tensors the
    step makes that are alive at once, read with a dispatch-mode hook (every
    op's outputs, as they are made and freed).
    """
    import tracemalloc

    import cases

    out = {}
    step = cases.make_step("minigrad-f64", "small")
    step()
    tracemalloc.start()
    tracemalloc.reset_peak()
    step()
    out["minigrad"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if cases.torch_available():
        out["torch"] = _torch_peak(cases.make_step("torch-f64", "small"))
    return out


def _torch_peak(step) -> int:
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    step()
    live: dict[int, int] = {}
    peak = [0]

    def track(t):
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            key = st.data_ptr()
            if key not in live:
                live[key] = st.nbytes()
                weakref.finalize(st, live.pop, key, None)
                peak[0] = max(peak[0], sum(live.values()))

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            res = func(*args, **(kwargs or {}))
            for r in (res if isinstance(res, (tuple, list)) else (res,)):
                track(r)
            return res

    with Mode():
        step()
    return peak[0]


def measure(n_tiny: int = 200, n_small: int = 20, chain_ops: int = 10_000) -> dict:
    import cases

    libs = ["numpy", "minigrad"] + (["torch"] if cases.torch_available() else [])
    out: dict = {"steps": {}, "chain": {}}
    for size, n in (("tiny", n_tiny), ("small", n_small)):
        for lib in libs:
            out["steps"][f"{lib}-f64 {size}"] = per_call("step", (f"{lib}-f64", size), n)
    for lib in libs[1:]:
        out["chain"][f"{lib} build"] = per_call("chain", (lib, "build", chain_ops), 2) / chain_ops
        out["chain"][f"{lib} build+backward"] = per_call("chain", (lib, "both", chain_ops), 2) / chain_ops
    out["chain"]["minigrad bytes per node"] = node_bytes(chain_ops)
    out["peak small step"] = peak_memory_small()
    return out


def report(m: dict) -> list[str]:
    """Markdown lines: ratios against hand-written NumPy and PyTorch, measured in the same run."""
    s = m["steps"]
    lines = ["| step | instructions | vs NumPy by hand | vs PyTorch |", "|---|---:|---:|---:|"]
    for size in ("tiny", "small"):
        base = s[f"numpy-f64 {size}"]
        torch = s.get(f"torch-f64 {size}")
        for lib in ("numpy", "minigrad", "torch"):
            v = s.get(f"{lib}-f64 {size}")
            if v is None:
                continue
            vs_torch = f"{v / torch:.2f}x" if torch else "n/a"
            lines.append(f"| {lib} {size} | {v:,.0f} | {v / base:.2f}x | {vs_torch} |")
    c = m["chain"]
    lines += ["", "| 10^4-op chain | per op |", "|---|---:|"]
    for k, v in c.items():
        unit = "bytes" if "bytes" in k else "instructions"
        lines.append(f"| {k} | {v:,.0f} {unit} |")
    if "torch build" in c:
        lines.append(f"| minigrad build / PyTorch build | {c['minigrad build'] / c['torch build']:.2f}x |")
    p = m["peak small step"]
    lines += ["", "| small step, peak memory | bytes |", "|---|---:|"]
    for k, v in p.items():
        lines.append(f"| {k} | {v:,} |")
    if "torch" in p:
        lines.append(f"| minigrad / PyTorch | {p['minigrad'] / p['torch']:.2f}x |")
    return lines


if __name__ == "__main__":
    if not available():
        sys.exit("valgrind is not installed: `apt-get install valgrind` (make bench installs it)")
    m = measure()
    print(json.dumps(m, indent=1))
    print("\n".join(report(m)))
