"""``make bench``: how close minigrad comes to hand-written NumPy and to PyTorch.

Writes ``benchmarks/RESULTS.md`` and ``benchmarks/results.png`` and prints the
headline table. Every measurement runs in a fresh worker process (worker.py)
with one BLAS thread, so that no implementation runs on a heap another one has
left behind; implementations are interleaved in several rounds, so that a burst
of load on the machine hits all of them alike.

    python benchmarks/run.py            # the full run (a few minutes)
    python benchmarks/run.py --quick    # a smoke run (well under a minute)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "worker.py")
sys.path.insert(0, HERE)

import cases  # noqa: E402  (after the path set-up)

SIZES = ("tiny", "small", "large")
CHAIN_NS = (1_000, 10_000, 100_000)
BASE = "numpy-f64"

# What the engine aims for on this kind of machine (ratios, not absolute times).
REACH = {
    "tiny": 1.5,     # minigrad-f64 / numpy-f64
    "small": 1.05,
    "large": 1.05,
    "f32 large": 0.6,  # minigrad-f32 / numpy-f64
    "chain seconds": 2.0,  # backward through 100k ops
    "compiled": 1.0,   # compiled-f64 / numpy-f64, tiny and small (minigrad.compile)
}


# ------------------------------------------------------------------ workers

# glibc hands out blocks above 128 KiB with fresh mmap()s and gives freed memory
# back to the OS, so every step of a NumPy program with large arrays pays page
# faults on new memory, in amounts that depend on what ran before. Fixed
# thresholds keep freed memory for reuse: steadier numbers, for every
# implementation alike. (`--default-malloc` measures without them.)
MALLOC_PIN = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20)}


def worker_env(threads: int, pin_malloc: bool = True) -> dict:
    env = os.environ.copy()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    for var, value in MALLOC_PIN.items():
        if pin_malloc:
            env[var] = value
        else:
            env.pop(var, None)
    env["PYTHONHASHSEED"] = "0"
    env["MPLBACKEND"] = "Agg"
    return env


def run_job(job: dict, threads: int, pin_malloc: bool = True) -> dict:
    proc = subprocess.run([sys.executable, WORKER, json.dumps(job)],
                          env=worker_env(threads, pin_malloc), capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark worker failed on {job}:\n{proc.stderr}")
    return json.loads(proc.stdout)


def say(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------- measurement

def measure_mlp(impls, rounds: int, seconds: float, threads: int, sizes=SIZES,
                pin_malloc: bool = True) -> dict:
    """{(size, impl): {"times": [...], "cpu": [...], "faults": [...]}} over all rounds."""
    out: dict = {}
    for r in range(rounds):
        for size in sizes:
            # Rotate the order each round, so no implementation always runs first.
            order = list(impls[r % len(impls):]) + list(impls[:r % len(impls)])
            for impl in order:
                job = {"kind": "mlp", "impl": impl, "size": size, "seconds": seconds,
                       "min_steps": 20 if size == "large" else 200}
                res = run_job(job, threads, pin_malloc)
                rec = out.setdefault((size, impl), {"times": [], "cpu": [], "faults": []})
                rec["times"] += res["times"]
                rec["cpu"].append(res["cpu_per_step"])
                rec["faults"].append(res["faults_per_step"])
            say(f"  round {r + 1}/{rounds}: {size} done")
    return out


def summarise(samples: dict) -> dict:
    stats = {}
    for key, rec in samples.items():
        t = np.asarray(rec["times"])
        stats[key] = {"median": float(np.median(t)), "p10": float(np.percentile(t, 10)),
                      "n": int(t.size), "cpu": float(np.mean(rec["cpu"])),
                      "faults": float(np.mean(rec["faults"]))}
    return stats


def measure_chain(libs, ns, threads: int, pin_malloc: bool = True) -> dict:
    out = {}
    for lib in libs:
        for n in ns:
            repeats = max(3, min(20, 200_000 // n))
            res = run_job({"kind": "chain", "lib": lib, "n": n, "repeats": repeats}, threads,
                          pin_malloc)
            out[(lib, n)] = {"forward": float(np.median(res["forward"])),
                             "backward": float(np.median(res["backward"])),
                             "backward best": float(np.min(res["backward"]))}
            say(f"  chain {lib} {n} ops: backward {out[(lib, n)]['backward']:.3f} s")
    return out


# ----------------------------------------------------------------- report

def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(b) -> str:
    if isinstance(b, str):
        return b
    return f"{b / 2**20:.1f} MiB"


def ratio(stats, size, impl, base=BASE, key="median"):
    a, b = stats.get((size, impl)), stats.get((size, base))
    return None if a is None or b is None else a[key] / b[key]


def ratio_cell(stats, size, impl, base=BASE) -> str:
    if (size, impl) not in stats:
        return "not installed" if impl.startswith("torch") else "—"
    r, p = ratio(stats, size, impl, base), ratio(stats, size, impl, base, "p10")
    return f"{r:.2f}× (p10 {p:.2f}×)"


def headline(stats, impls) -> list[str]:
    cols = [i for i in cases.IMPLS if i != BASE]
    lines = ["| size | NumPy f64, by hand | " + " | ".join(c.replace("-", " ") for c in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for size in SIZES:
        base = stats[(size, BASE)]
        cells = [ratio_cell(stats, size, c) if c in impls or c.startswith("torch") else "—"
                 for c in cols]
        lines.append(f"| {size} | {fmt_time(base['median'])} (p10 {fmt_time(base['p10'])}) | "
                     + " | ".join(cells) + " |")
    return lines


def reach_rows(stats, chain, has_torch) -> list[tuple[str, str, str, str]]:
    rows = []
    for size in SIZES:
        r = ratio(stats, size, "minigrad-f64")
        p = ratio(stats, size, "minigrad-f64", key="p10")
        rows.append((f"{size}: minigrad f64 / NumPy f64", f"≤ {REACH[size]}",
                     f"{r:.2f} (p10 {p:.2f})", "met" if r <= REACH[size] else "missed"))
    for size in ("tiny", "small"):
        r = ratio(stats, size, "compiled-f64")
        p = ratio(stats, size, "compiled-f64", key="p10")
        if r is None:  # not measured in this run
            continue
        rows.append((f"{size}: compiled f64 / NumPy f64", f"≤ {REACH['compiled']}",
                     f"{r:.2f} (p10 {p:.2f})", "met" if r <= REACH["compiled"] else "missed"))
    r = ratio(stats, "large", "minigrad-f32")
    p = ratio(stats, "large", "minigrad-f32", key="p10")
    rows.append(("large: minigrad f32 / NumPy f64", f"≤ {REACH['f32 large']}",
                 f"{r:.2f} (p10 {p:.2f})", "met" if r <= REACH["f32 large"] else "missed"))
    for size in SIZES:
        if not has_torch:
            rows.append((f"{size}: minigrad f64 / PyTorch f64", "< 1", "torch not installed", "n/a"))
            continue
        r = ratio(stats, size, "minigrad-f64", base="torch-f64")
        p = ratio(stats, size, "minigrad-f64", base="torch-f64", key="p10")
        rows.append((f"{size}: minigrad f64 / PyTorch f64", "< 1", f"{r:.2f} (p10 {p:.2f})",
                     "met" if r < 1 else "missed"))
    key = ("minigrad", max(n for lib, n in chain if lib == "minigrad"))
    b = chain[key]["backward"]
    rows.append((f"backward through {key[1]:,} ops", f"< {REACH['chain seconds']:.0f} s",
                 f"{b:.2f} s (best {chain[key]['backward best']:.2f} s)",
                 "met" if b < REACH["chain seconds"] else "missed"))
    return rows


def table(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def profile_rows(prof, top=12):
    rows = []
    for r in prof["rows"][:top]:
        rows.append((f"`{r['where']}:{r['line']}({r['name']})`", f"{r['ncalls']:.0f}",
                     f"{r['tottime'] * 1e6:.2f} µs"))
    return rows


def group_profile(prof) -> dict[str, float]:
    """Own time per step, grouped: minigrad's Python files, NumPy and other C calls, the rest."""
    groups: dict[str, float] = {}
    for r in prof["rows"]:
        where = r["where"]
        if where.startswith("minigrad/"):
            g = where
        elif where == "builtin":
            g = "C functions (NumPy, builtins)"
        else:
            g = "other Python (NumPy's Python layer, the harness)"
        groups[g] = groups.get(g, 0.0) + r["tottime"]
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]))


def plot(stats, impls, chain, mem, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    ax = axes[0]
    cols = [i for i in cases.IMPLS if i in impls]
    width = 0.8 / len(cols)
    for j, impl in enumerate(cols):
        ys = [ratio(stats, s, impl) for s in SIZES]
        ax.bar(np.arange(len(SIZES)) + (j - (len(cols) - 1) / 2) * width, ys, width, label=impl)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(SIZES)), ["{}\n{}\nbatch {}".format(
        s, "-".join(map(str, cases.SIZES[s][1])), cases.SIZES[s][0]) for s in SIZES], fontsize=8)
    ax.set_yscale("log")
    ticks = [0.25, 0.5, 1, 2, 4, 8]
    ax.set_yticks(ticks, [f"{t:g}×" for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel("step time / NumPy f64 by hand (median)")
    ax.set_title("MLP training step, one BLAS thread")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, axis="y")

    ax = axes[1]
    for lib, marker in (("minigrad", "o"), ("torch", "s")):
        pts = sorted((n, v["backward"]) for (li, n), v in chain.items() if li == lib)
        if not pts:
            continue
        ns, ts = zip(*pts)
        ax.loglog(ns, ts, marker=marker, label=f"{lib} backward")
        fw = sorted((n, v["forward"]) for (li, n), v in chain.items() if li == lib)
        ax.loglog([n for n, _ in fw], [t for _, t in fw], marker=marker, ls=":", alpha=0.6,
                  label=f"{lib} forward")
    pts = sorted((n, v["backward"]) for (li, n), v in chain.items() if li == "minigrad")
    n0, t0 = pts[0]
    ns = np.array([p[0] for p in pts])
    ax.loglog(ns, t0 * ns / n0, "k--", lw=0.8, label="linear (slope 1)")
    ax.set_xlabel("ops in the chain")
    ax.set_ylabel("seconds (median)")
    ax.set_title("Deep chain: time against depth")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")

    ax = axes[2]
    labels, values = [], []
    for k, v in mem.items():
        if k == "deep":
            continue
        labels.append(k.replace(" step", "").replace(", ", "\n"))
        values.append(v / 2**20 if isinstance(v, (int, float)) else 0.0)
        if not isinstance(v, (int, float)):
            ax.text(0.5, len(labels) - 1, v, va="center", fontsize=8, color="0.4")
    ax.barh(labels, values, color="#6a9fd4")
    ax.set_xlabel("peak MiB allocated during one step (tracemalloc)")
    ax.set_title("Memory of a training step")
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def agreement_lines(agree) -> list[str]:
    lines = ["| size | " + " | ".join(agree["tiny"]) + " |", "|---|" + "---|" * len(agree["tiny"])]
    for size in SIZES:
        lines.append(f"| {size} | " + " | ".join(f"{v:.1e}" for v in agree[size].values()) + " |")
    return lines


def write_report(path, env, agree, stats, impls, chain, mem, phases, prof, args, elapsed,
                 has_torch, alloc=None) -> list[str]:
    today = datetime.date.today().isoformat()
    blas = env["numpy blas"]
    rt = env.get("openblas at run time") or {}
    torch = env.get("torch") or {}
    L = []
    L += ["# Benchmark results", "",
          f"Measured on {today} at commit `{git_commit()}`; regenerated by `make bench` "
          f"(`python benchmarks/run.py`), which overwrites this file and `results.png`. "
          f"The run took {elapsed / 60:.1f} minutes.", ""]
    if args.quick:
        L += ["**This is a --quick smoke run: too few repeats to quote.**", ""]
    load = env["load average"]
    L += ["## The machine", "",
          f"- CPU: {env['cpu']}, {env['cores']} cores; load average at the start: {load} "
          f"(1, 5, 15 min). A load above the number of cores means other processes were "
          f"running: absolute times are then inflated and noisy, and the ratios below are "
          f"the numbers to read.",
          f"- Python {env['python']}, NumPy {env['numpy']} with {blas.get('name')} "
          f"{blas.get('version', '')}.",
          f"- OpenBLAS at run time: core type `{rt.get('corename', 'unknown')}`, "
          f"{rt.get('threads', '?')} thread(s).",
          "- PyTorch: " + (f"{torch['version']} ({torch['blas']}), {torch['threads']} thread(s) "
                           f"(its workers call `torch.set_num_threads({args.threads})`)."
                           if torch else "not installed (`make torch` adds it)."),
          "- Environment of every worker (the harness sets the thread and malloc variables; "
          "the others are recorded as they were inherited): "
          + ", ".join(f"`{k}={v}`" for k, v in env["env"].items()) + ".", ""]
    L += ["## How it is measured", "",
          "- **One process per measurement.** Each implementation and size runs in a fresh "
          "worker (`benchmarks/worker.py`), so no implementation runs on a heap that another "
          "one has left behind (a NumPy step that follows minigrad in the same process can "
          "take many more page faults).",
          f"- **One BLAS thread** (`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, "
          f"`MKL_NUM_THREADS` = {args.threads}, set before NumPy is imported; "
          f"`torch.set_num_threads({args.threads})`). With two threads, small matrix products "
          f"are bimodal on a two-core machine.",
          f"- **Interleaved rounds.** {args.rounds} round(s); in each, every implementation "
          f"warms up (≥ 0.3 s), then runs for about {args.seconds:g} s, one timer reading "
          f"per step. The order of the implementations rotates between rounds. The garbage "
          f"collector stays on, as in real use.",
          "- **Fixed malloc thresholds** "
          + ("(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, see the environment above). "
             "glibc otherwise serves every array above 128 KiB from a fresh `mmap` and returns "
             "freed memory to the OS, so each step pays page faults for memory it just "
             "released; how many depends on what ran before. The section *Allocator* below "
             "shows the small step without them." if not args.default_malloc else
             "were not used in this run (`--default-malloc`): glibc's defaults apply."),
          "- **Median and p10.** Tables give the median step time and, in brackets, the 10th "
          "percentile, which is what the step costs when nothing else gets in the way.",
          "- **Same numbers everywhere.** Before anything is timed, every implementation's "
          "loss and gradients of the first step are compared with the hand-written NumPy "
          "of the same dtype (relative to the largest gradient entry: the largest difference in "
          "float64; in float32 the 99.9th percentile, because an input within round-off of "
          "ReLU's kink can fall on the other side of it in another BLAS and move a few entries):",
          ""]
    L += agreement_lines(agree)
    L += ["",
          "Deep chain gradients agree with a hand derivation to "
          + ", ".join(f"{lib} {v:.1e}" for lib, v in agree["chain"].items()) + ".", "",
          "What each implementation runs (`benchmarks/cases.py`): *NumPy by hand* is "
          "`minigrad.reference.mlp_step`, the forward and backward written out as plain NumPy "
          "expressions plus the SGD update; *minigrad* is `nn.MLP` + "
          "`cross_entropy_with_logits` + `backward()` + `optim.SGD`; *PyTorch* is "
          "`nn.Sequential(Linear, ReLU, Linear)` + `F.cross_entropy` + `backward()` + "
          "`optim.SGD`, eager mode on the CPU. Sizes: tiny = the reading's 3-4-2 network on "
          "3 examples, no biases; small = 784-128-10, batch 64; large = 784-1024-10, "
          "batch 512.", ""]
    L += ["## Headline: one training step, time relative to hand-written NumPy (float64)", "",
          "Below 1 is faster than the hand-written NumPy step.", ""]
    L += headline(stats, impls)
    L += ["", "![results](results.png)", ""]
    L += ["## Reach", ""]
    L += table(("goal", "target", "measured (median; p10)", "status"),
               reach_rows(stats, chain, has_torch))
    L += ["", "## All step times", ""]
    rows = []
    for size in SIZES:
        for impl in cases.IMPLS:
            s = stats.get((size, impl))
            if s is None:
                rows.append((size, impl, "not installed", "", "", "", ""))
                continue
            rows.append((size, impl, fmt_time(s["median"]), fmt_time(s["p10"]), fmt_time(s["cpu"]),
                         f"{s['faults']:.0f}", s["n"]))
    L += table(("size", "implementation", "median", "p10", "CPU time / step", "page faults / step",
                "steps timed"), rows)
    L += ["", "CPU time is the process's CPU time over the timed loop divided by the steps; "
          "when it is well below the median wall time, the process was waiting for a core.", ""]
    if alloc:
        L += ["## Allocator", "",
              "The small step with glibc's default malloc settings (one round), beside the "
              "main run:", ""]
        rows = []
        for (size, impl), a in alloc.items():
            p = stats[(size, impl)]
            rows.append((impl, fmt_time(p["median"]), f"{p['faults']:.0f}", fmt_time(a["median"]),
                         f"{a['faults']:.0f}"))
        L += table(("small step", "fixed thresholds", "page faults / step", "glibc defaults",
                    "page faults / step"), rows)
        L += [""]
    L += ["## Deep chain: backward through n ops", "",
          "A chain of elementwise ops on a 16-element vector, cycling through `y * 0.9`, "
          "`y + 0.1` and `tanh(y)`, then `sum()` and `backward()`. The engine orders the graph "
          "without recursion, so depth costs time in proportion and nothing else.", ""]
    rows = []
    for (lib, n), v in sorted(chain.items(), key=lambda kv: (kv[0][0] != "minigrad", kv[0][1])):
        rows.append((lib, f"{n:,}", fmt_time(v["forward"]), fmt_time(v["backward"]),
                     f"{v['backward'] / n * 1e6:.2f} µs", f"{v['forward'] / n * 1e6:.2f} µs"))
    L += table(("library", "ops", "forward (build)", "backward", "backward per op", "forward per op"),
               rows)
    L += ["", "## Memory of one training step", "",
          "Peak bytes allocated while one step runs (after a warm-up step), as `tracemalloc` "
          "sees them: NumPy reports its array buffers to it. Parameters and data that exist "
          "before the step are not counted. The deep case is an MLP with "
          f"{mem['deep']['depth']} hidden layers of {mem['deep']['width']} units, batch "
          f"{mem['deep']['batch']}; its checkpointed variant wraps every Linear+ReLU block in "
          "`minigrad.checkpoint` (used only when the package provides it, and only after its "
          "gradients match the plain step's).", ""]
    L += table(("step", "peak allocated"), [(k, fmt_bytes(v)) for k, v in mem.items() if k != "deep"])
    L += ["", "## Where the time goes", ""]
    base = stats[("tiny", BASE)]["median"]
    L += [f"Median phase times of minigrad's tiny step, each timed on its own: forward "
          f"{fmt_time(phases['forward'])}, backward {fmt_time(phases['backward'])}, update "
          f"{fmt_time(phases['update'])} (the hand-written NumPy step takes "
          f"{fmt_time(base)} in all).", "",
          "cProfile of the tiny minigrad step, own time per step grouped by file (cProfile "
          "inflates every Python call, so read these as shares, not as times):", ""]
    groups = group_profile(prof)
    total = sum(groups.values())
    L += table(("where", "share"), [(g, f"{v / total:.0%}") for g, v in groups.items()])
    L += ["", "The most expensive functions (own time per step, under the profiler):", ""]
    L += table(("function", "calls / step", "own time / step"), profile_rows(prof))
    L += ["", *gap_notes(stats, chain), ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(L))
    return headline(stats, impls)


def gap_notes(stats, chain) -> list[str]:
    """What the numbers say, with this run's numbers filled in."""
    def extra(size):
        return stats[(size, "minigrad-f64")]["median"] - stats[(size, BASE)]["median"]

    per_op = {n: v["backward"] / n for (lib, n), v in chain.items() if lib == "minigrad"}
    small_n, big_n = min(per_op), max(per_op)
    fwd = {n: v["forward"] / n for (lib, n), v in chain.items() if lib == "minigrad"}
    growth = per_op[big_n] / per_op[small_n]
    linear = ("linear in depth" if growth < 1.5 else
              f"{growth:.1f}× more per op, so somewhat worse than linear on this run "
              f"(a deep graph no longer fits the caches)")
    text = f"""\
### Reading these numbers

- **Tiny: Python, not arithmetic.** A NumPy call on a 3×4 array costs about a
  microsecond whatever it computes, so the hand-written step is some 25 NumPy calls and
  little else. minigrad makes about the same NumPy calls, and adds
  {fmt_time(extra("tiny"))} per step of bookkeeping for its four ops: per op a
  `Function.apply` (a Context, a Tensor, the version stamps) and a VJP call; per graph a
  topological sort, the in-place checks, the gradient dictionary and the release of saved
  values; and the Python calls of `nn` and `optim`. The profile above shows where.
- **Small and large: the same bookkeeping, diluted.** The small step records six ops
  (two bias adds more) and spends {fmt_time(extra("small"))} more than NumPy by hand
  ({extra("small") / stats[("small", BASE)]["median"]:.0%} of its time); at the large size
  the matrix products take tens of milliseconds and the difference is within the noise.
  minigrad calls the same BLAS routines on the same memory layouts (the VJPs' `.T` are
  views, which BLAS takes as a transpose flag), skips the gradient of `x`
  (`needs_input_grad`), and hands fresh gradient arrays to the parameters without a copy.
- **What would close the gap** at the small sizes is fewer Python calls per op: a fused
  `linear` op for `x @ W + b` (PyTorch's `addmm`), a replayed `trace()` whose order and
  checks are computed once, or the engine loop in C, which is what PyTorch does. Each
  trades away some of what makes this engine easy to read, which is its purpose.
- **float32** halves the bytes moved and roughly halves a matrix product's time:
  minigrad in float32 takes {ratio(stats, "large", "minigrad-f32"):.2f}× the time of
  hand-written float64 at the large size.
- **PyTorch** pays several microseconds of dispatch per op and a heavier autograd graph,
  which dominates at the tiny and small sizes; at the large size its MKL kernels and
  NumPy's OpenBLAS do the same work, and which is faster depends on the CPU.
- **Deep chain.** Backward costs {per_op[small_n] * 1e6:.1f} µs per op at {small_n:,} ops
  and {per_op[big_n] * 1e6:.1f} µs at {big_n:,}: {linear}. The engine pauses
  Python's cycle collector while it walks the graph (the graph has no reference cycles),
  otherwise the collector's periodic re-scans of every live object make deep graphs
  superlinear. Building the graph (forward: {fwd[small_n] * 1e6:.1f} µs per op at
  {small_n:,}, {fwd[big_n] * 1e6:.1f} µs at {big_n:,}) still pays those re-scans, because
  it runs in the user's code."""
    return text.split("\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run: one short round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.0, help="timed seconds per worker")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (1 for the headline)")
    ap.add_argument("--out", default=HERE, help="where RESULTS.md and results.png go")
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions with valgrind's callgrind (benchmarks/instructions.py)")
    ap.add_argument("--default-malloc", action="store_true",
                    help="leave glibc's malloc thresholds alone (more page faults, noisier)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 1, 0.15
    start = time.perf_counter()
    pin = not args.default_malloc
    has_torch = cases.torch_available()
    impls = [i for i in cases.IMPLS if has_torch or not i.startswith("torch")]

    say("benchmarks: environment and agreement checks")
    env = run_job({"kind": "env", "torch": has_torch}, args.threads, pin)
    agree = run_job({"kind": "agreement", "impls": impls, "sizes": list(SIZES),
                     "chain_libs": ["minigrad"] + (["torch"] if has_torch else [])},
                    args.threads, pin)
    bad = [(s, i, v) for s in SIZES for i, v in agree[s].items()
           if v > (1e-9 if i.endswith("f64") else 1e-4)]
    bad += [("chain", lib, v) for lib, v in agree["chain"].items() if v > 1e-9]
    if bad:
        for s, i, v in bad:
            say(f"  DISAGREE: {i} on {s}: relative difference {v:.2e}")
        say("benchmarks: the implementations do not compute the same thing; nothing timed.")
        return 1

    say(f"benchmarks: MLP step, {len(impls)} implementations x {len(SIZES)} sizes x "
        f"{args.rounds} round(s)")
    stats = summarise(measure_mlp(impls, args.rounds, args.seconds, args.threads, pin_malloc=pin))
    alloc = None
    if pin:
        say("benchmarks: the small step again, with glibc's default malloc settings")
        alloc = summarise(measure_mlp([i for i in impls if i.endswith("f64")], 1, args.seconds,
                                      args.threads, sizes=("small",), pin_malloc=False))
    say("benchmarks: deep chain")
    ns = CHAIN_NS if not args.quick else CHAIN_NS[:2]
    chain = measure_chain(["minigrad"] + (["torch"] if has_torch else []), ns, args.threads, pin)
    say("benchmarks: memory and profile")
    mem = run_job({"kind": "memory"}, args.threads, pin)
    phases = run_job({"kind": "phases", "impl": "minigrad-f64", "size": "tiny",
                      "steps": 300 if args.quick else 3000}, args.threads, pin)
    prof = run_job({"kind": "profile", "impl": "minigrad-f64", "size": "tiny",
                    "steps": 300 if args.quick else 3000}, args.threads, pin)

    counted = None
    if args.instructions:
        import instructions
        if instructions.available():
            say("benchmarks: instruction counts (callgrind)")
            counted = instructions.report(instructions.measure())
        else:
            say("benchmarks: valgrind is not installed; no instruction counts")

    os.makedirs(args.out, exist_ok=True)
    plot(stats, impls, chain, mem, os.path.join(args.out, "results.png"))
    lines = write_report(os.path.join(args.out, "RESULTS.md"), env, agree, stats, impls, chain,
                         mem, phases, prof, args, time.perf_counter() - start, has_torch, alloc)
    say("")
    say("One training step, time relative to hand-written NumPy float64 (median, p10):")
    for line in lines:
        say(line)
    for goal, target, measured, status in reach_rows(stats, chain, has_torch):
        say(f"  {status:7s} {goal}: {measured} (target {target})")
    if counted:
        with open(os.path.join(args.out, "RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n## Instruction counts (callgrind)\n\n"
                    "Counted with valgrind's callgrind, one BLAS thread: each figure is the "
                    "difference between 2n and n repetitions, divided by n, in fresh processes; "
                    "it repeats to about 0.1% whatever else the machine runs.\n\n")
            f.write("\n".join(counted) + "\n")
        for line in counted:
            say(line)
    say(f"wrote {os.path.relpath(os.path.join(args.out, 'RESULTS.md'), ROOT)} and results.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
