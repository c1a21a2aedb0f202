"""The benchmark harness measures the same computation everywhere (no timing is asserted)."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import needs_torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import cases  # noqa: E402
import run  # noqa: E402


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_minigrad_and_numpy_compute_the_same_step(size):
    diffs = cases.agreement(["numpy-f64", "minigrad-f64", "numpy-f32", "minigrad-f32"], size)
    assert diffs["minigrad-f64"] < 1e-12
    assert diffs["minigrad-f32"] < 1e-5


@needs_torch
@pytest.mark.parametrize("size", ["tiny", "small"])
def test_pytorch_computes_the_same_step(size):
    diffs = cases.agreement(["torch-f64", "torch-f32"], size)
    assert diffs["torch-f64"] < 1e-12 and diffs["torch-f32"] < 1e-5


def test_every_step_function_trains():
    for impl in ("numpy-f64", "minigrad-f64", "minigrad-f32"):
        step = cases.make_step(impl, "tiny")
        first = step().item()
        for _ in range(20):
            last = step().item()
        assert last < first, impl


def test_the_tiny_size_is_the_readings_example():
    x, y, (w1, b1, w2, b2) = cases.problem("tiny")
    assert x.shape == (3, 3) and w1.shape == (3, 4) and w2.shape == (4, 2)
    assert b1 is None and b2 is None and y.tolist() == [0, 1, 1]


def test_deep_chain_gradient_matches_a_hand_derivation():
    forward, backward = cases.make_chain("minigrad", 301)
    np.testing.assert_allclose(backward(forward()), cases.chain_reference(301), rtol=1e-12)


def test_deep_mlp_step_runs_and_checkpoint_is_detected():
    model, x, y = cases.deep_mlp(depth=2, width=8, batch=4)
    loss = cases.deep_mlp_step(model, x, y)
    assert np.isfinite(loss.item()) and all(p.grad is not None for p in model.parameters())
    ck = cases.checkpoint_fn()
    assert ck is None or callable(ck)


def test_worker_returns_one_time_per_step():
    job = {"kind": "mlp", "impl": "minigrad-f64", "size": "tiny", "seconds": 0.05,
           "warmup_seconds": 0.01, "min_steps": 30, "max_steps": 40}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "worker.py"), json.dumps(job)],
                         capture_output=True, text=True, timeout=120, check=True)
    res = json.loads(out.stdout)
    assert 30 <= len(res["times"]) <= 40 and all(t > 0 for t in res["times"])
    assert res["warmup_steps"] >= 5


def test_reach_rows_compare_ratios_with_the_targets():
    def s(median):
        return {"median": median, "p10": median}

    stats = {}
    for size, (numpy, mg64, mg32) in {"tiny": (1.0, 1.4, 1.4), "small": (1.0, 1.2, 0.5),
                                      "large": (1.0, 1.0, 0.7)}.items():
        stats[(size, "numpy-f64")] = s(numpy)
        stats[(size, "minigrad-f64")] = s(mg64)
        stats[(size, "minigrad-f32")] = s(mg32)
        stats[(size, "torch-f64")] = s(1.3)
    chain = {("minigrad", 100_000): {"backward": 2.5, "backward best": 1.9}}
    status = {goal: st for goal, _, _, st in run.reach_rows(stats, chain, has_torch=True)}
    assert status["tiny: minigrad f64 / NumPy f64"] == "met"
    assert status["small: minigrad f64 / NumPy f64"] == "missed"
    assert status["large: minigrad f64 / NumPy f64"] == "met"
    assert status["large: minigrad f32 / NumPy f64"] == "missed"
    assert status["tiny: minigrad f64 / PyTorch f64"] == "missed"
    assert status["small: minigrad f64 / PyTorch f64"] == "met"
    assert status["backward through 100,000 ops"] == "missed"
    no_torch = run.reach_rows(stats, chain, has_torch=False)
    assert [r[3] for r in no_torch if "PyTorch" in r[0]] == ["n/a"] * 3


def test_instruction_report_gives_ratios_against_numpy_and_pytorch_from_one_run():
    import instructions

    m = {"steps": {"numpy-f64 tiny": 200.0, "minigrad-f64 tiny": 300.0, "torch-f64 tiny": 600.0,
                   "numpy-f64 small": 1000.0, "minigrad-f64 small": 1010.0},
         "chain": {"minigrad build": 30.0, "torch build": 20.0, "minigrad bytes per node": 450.0},
         "peak small step": {"minigrad": 900, "torch": 1000}}
    text = "\n".join(instructions.report(m))
    assert "| minigrad tiny | 300 | 1.50x | 0.50x |" in text
    assert "| minigrad small | 1,010 | 1.01x | n/a |" in text
    assert "minigrad build / PyTorch build | 1.50x" in text and "450 bytes" in text
    assert "| minigrad / PyTorch | 0.90x |" in text


def test_instruction_counts_subtract_start_up(monkeypatch):
    import instructions

    counts = {5: 1_000_000 + 5 * 300, 10: 1_000_000 + 10 * 300}
    monkeypatch.setattr(instructions, "_instructions", lambda kind, arg, n: counts[n])
    assert instructions.per_call("step", ("minigrad-f64", "tiny"), 5) == 300
