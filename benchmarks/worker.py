"""One measurement in a fresh process: ``python benchmarks/worker.py '<json job>'``.

The driver (``run.py``) starts one worker per implementation and size, so that
no implementation runs on a heap another one has left behind, and sets the BLAS
thread variables in the worker's environment before NumPy is imported. The
worker prints one JSON object on stdout.

Jobs:
    {"kind": "mlp", "impl": "minigrad-f64", "size": "small", "seconds": 1.5, ...}
    {"kind": "chain", "lib": "minigrad", "n": 10000, "repeats": 5}
    {"kind": "memory"}
    {"kind": "profile", "impl": "minigrad-f64", "size": "tiny", "steps": 2000}
    {"kind": "agreement", "impls": [...], "sizes": [...]}
    {"kind": "env"}
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # the repo root: minigrad without installing it

import cases  # noqa: E402  (after the path set-up)
import numpy as np  # noqa: E402


def _minflt() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_mlp(job: dict) -> dict:
    """Per-step wall times after warm-up, plus CPU time and page faults per step."""
    step = cases.make_step(job["impl"], job["size"])
    warm_until = time.perf_counter() + job.get("warmup_seconds", 0.3)
    k = 0
    t0 = time.perf_counter()
    while k < job.get("min_warmup", 5) or time.perf_counter() < warm_until:
        step()
        k += 1
    per_step = (time.perf_counter() - t0) / k
    n = int(min(max(job.get("seconds", 1.5) / per_step, job.get("min_steps", 20)),
                job.get("max_steps", 20000)))
    times = [0.0] * n
    clock = time.perf_counter
    faults, cpu = _minflt(), time.process_time()
    for i in range(n):
        t = clock()
        step()
        times[i] = clock() - t
    cpu = time.process_time() - cpu
    faults = _minflt() - faults
    return {"times": times, "cpu_per_step": cpu / n, "faults_per_step": faults / n,
            "warmup_steps": k}


def time_chain(job: dict) -> dict:
    """Forward (graph building) and backward times of an n-op chain, best and median."""
    forward, backward = cases.make_chain(job["lib"], job["n"])
    fwd, bwd = [], []
    out = forward()
    backward(out)  # warm-up
    for _ in range(job["repeats"]):
        t = time.perf_counter()
        out = forward()
        fwd.append(time.perf_counter() - t)
        t = time.perf_counter()
        backward(out)
        bwd.append(time.perf_counter() - t)
        del out
    return {"forward": fwd, "backward": bwd}


def _peak(fn) -> int:
    """Peak bytes that tracemalloc sees allocated while ``fn()`` runs."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def memory(job: dict) -> dict:
    """Peak bytes allocated by one training step (after a warm-up step)."""
    out = {}
    for impl in ("numpy-f64", "minigrad-f64", "minigrad-f32"):
        step = cases.make_step(impl, "large")
        step()
        out[f"{impl} large step"] = _peak(step)

    depth, width, batch = job.get("depth", 8), job.get("width", 512), job.get("batch", 256)
    out["deep"] = {"depth": depth, "width": width, "batch": batch}
    model, x, y = cases.deep_mlp(depth, width, batch)
    cases.deep_mlp_step(model, x, y)
    out["deep MLP step"] = _peak(lambda: cases.deep_mlp_step(model, x, y))
    ck = cases.checkpoint_fn()
    if ck is None:
        out["deep MLP step, checkpointed"] = "not available"
    else:
        try:
            model.zero_grad()
            ref = cases.deep_mlp_step(model, x, y)
            ref_grads = [p.grad.copy() for p in model.parameters()]
            model.zero_grad()
            loss = cases.deep_mlp_step(model, x, y, checkpoint=ck)
            same = abs(loss.item() - ref.item()) < 1e-12 and all(
                np.allclose(p.grad, g, rtol=1e-10, atol=1e-12)
                for p, g in zip(model.parameters(), ref_grads))
            if not same:
                out["deep MLP step, checkpointed"] = "failed: gradients differ from the plain step"
            else:
                model.zero_grad()
                out["deep MLP step, checkpointed"] = _peak(
                    lambda: cases.deep_mlp_step(model, x, y, checkpoint=ck))
        except Exception as e:  # its API is not known here; report, don't crash
            out["deep MLP step, checkpointed"] = f"failed: {type(e).__name__}: {e}"
    return out


def profile(job: dict) -> dict:
    """cProfile of many steps: total time per function, grouped by where it lives."""
    import cProfile
    import pstats

    step = cases.make_step(job["impl"], job["size"])
    for _ in range(50):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(job["steps"]):
        step()
    prof.disable()
    stats = pstats.Stats(prof)
    rows = []
    for (path, line, name), (_cc, ncalls, tottime, _ct, _callers) in stats.stats.items():
        where = path.replace(os.sep, "/")
        if "/minigrad/" in where:
            where = "minigrad/" + where.rsplit("/minigrad/", 1)[1]
        elif where == "~":
            where = "builtin"
        else:
            where = os.path.basename(where)
        rows.append({"where": where, "name": name, "line": line, "ncalls": ncalls / job["steps"],
                     "tottime": tottime / job["steps"]})
    rows.sort(key=lambda r: -r["tottime"])
    return {"rows": rows}


def phases(job: dict) -> dict:
    """Median time of minigrad's forward, backward and update, each on its own."""
    import minigrad as mg

    lib, dtype = cases.impl_parts(job["impl"])
    assert lib == "minigrad"
    x, y, (w1, b1, w2, b2) = cases.problem(job["size"], dtype)
    _, (d, h, c), bias = cases.SIZES[job["size"]]
    model = mg.nn.MLP([d, h, c], bias=bias, dtype=dtype)
    model[0].weight = mg.Tensor(w1, requires_grad=True, dtype=dtype)
    model[2].weight = mg.Tensor(w2, requires_grad=True, dtype=dtype)
    opt = mg.optim.SGD(model.parameters(), lr=cases.LR)
    xt = mg.Tensor(x, dtype=dtype)
    clock = time.perf_counter
    rows = []
    for i in range(job["steps"] + 100):
        t0 = clock()
        opt.zero_grad()
        loss = model(xt).cross_entropy_with_logits(y)
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        t3 = clock()
        if i >= 100:
            rows.append((t1 - t0, t2 - t1, t3 - t2))
    med = np.median(np.array(rows), axis=0)
    return {"forward": med[0], "backward": med[1], "update": med[2]}


def agreement(job: dict) -> dict:
    out = {}
    for size in job["sizes"]:
        out[size] = cases.agreement(job["impls"], size)
    n = job.get("chain_n", 300)
    grads = {"reference": cases.chain_reference(n)}
    for lib in job.get("chain_libs", ["minigrad"]):
        forward, backward = cases.make_chain(lib, n)
        g = backward(forward())
        grads[lib] = np.asarray(g.detach().numpy() if hasattr(g, "detach") else g)
    out["chain"] = {lib: float(np.max(np.abs(g - grads["reference"])))
                    for lib, g in grads.items() if lib != "reference"}
    return out


def env(job: dict) -> dict:
    import envinfo

    return envinfo.collect(with_torch=job.get("torch", True))


JOBS = {"mlp": time_mlp, "chain": time_chain, "memory": memory, "profile": profile,
        "phases": phases, "agreement": agreement, "env": env}


def main() -> None:
    job = json.loads(sys.argv[1])
    result = JOBS[job["kind"]](job)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
