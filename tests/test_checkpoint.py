"""Checkpointing: same gradients, less memory, one extra forward; the planner is optimal."""

import itertools
import math

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor, nn
from minigrad.memory import MemoryProfiler
from minigrad.planner import (
    Plan,
    binomial_reach,
    min_peak,
    plan_segments,
    revolve_forward_steps,
    simulate_plan,
    sqrt_plan,
    uniform_plan,
)


def blocks(n=6, width=8, dropout=0.0, generator=None, seed=0, act=nn.Tanh):
    mg.random.manual_seed(seed)
    layers = []
    for _ in range(n):
        layer = [nn.Linear(width, width), act()]
        if dropout:
            layer.append(nn.Dropout(dropout, generator=generator))
        layers.append(nn.Sequential(*layer))
    return nn.Sequential(*layers)


def grads_of(run, n=6, dropout=0.0, generator_seed=None, seed=0):
    """Gradients of sum(out**2) w.r.t. the input and every parameter, from a fresh model."""
    gen = np.random.default_rng(generator_seed) if generator_seed is not None else None
    model = blocks(n, dropout=dropout, generator=gen, seed=seed)
    mg.random.manual_seed(123)  # the dropout masks of this step
    x = Tensor(np.random.default_rng(1).normal(size=(5, 8)), requires_grad=True)
    out = run(model, x)
    loss = (out * out).sum()
    loss.backward()
    return loss.item(), [x.grad] + [p.grad for p in model.parameters()]


def assert_same(a, b, tol=1e-12):
    (la, ga), (lb, gb) = a, b
    assert abs(la - lb) <= tol
    assert len(ga) == len(gb)
    for u, v in zip(ga, gb):
        np.testing.assert_allclose(u, v, rtol=0, atol=tol)


PLAIN = lambda m, x: m(x)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_checkpoint_gives_the_same_gradients(dropout):
    ref = grads_of(PLAIN, dropout=dropout)
    assert_same(grads_of(lambda m, x: mg.checkpoint(m, x), dropout=dropout), ref)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_checkpoint_sequential_gives_the_same_gradients(k, dropout):
    ref = grads_of(PLAIN, dropout=dropout)
    assert_same(grads_of(lambda m, x: mg.checkpoint_sequential(m, k, x), dropout=dropout), ref)
    assert_same(grads_of(lambda m, x: mg.checkpoint_sequential(m, k, x, keep_last=True),
                         dropout=dropout), ref)


def test_dropout_with_its_own_generator_is_replayed_too():
    ref = grads_of(PLAIN, dropout=0.5, generator_seed=7)
    assert_same(grads_of(lambda m, x: mg.checkpoint_sequential(m, 3, x), dropout=0.5,
                         generator_seed=7), ref)


def test_a_plan_with_stored_and_recomputed_segments_gives_the_same_gradients():
    ref = grads_of(PLAIN, dropout=0.3)
    plan = Plan((0, 2, 3, 6), (False, True, False))
    assert_same(grads_of(lambda m, x: mg.checkpoint_sequential(m, plan, x), dropout=0.3), ref)


def test_without_the_rng_state_dropout_masks_differ_and_the_check_says_so():
    with pytest.raises(RuntimeError, match="pure function"):
        grads_of(lambda m, x: mg.checkpoint(m, x, preserve_rng_state=False), dropout=0.3)
    # With the check off, the gradients are silently wrong: the reason for the check.
    wrong = grads_of(lambda m, x: mg.checkpoint(m, x, preserve_rng_state=False,
                                                determinism_check="none"), dropout=0.3)
    ref = grads_of(PLAIN, dropout=0.3)
    assert max(np.abs(u - v).max() for u, v in zip(wrong[1], ref[1])) > 1e-3


def test_recomputation_does_not_disturb_the_random_stream():
    mg.random.manual_seed(5)
    model = blocks(3, dropout=0.5)
    x = Tensor(np.ones((2, 8)), requires_grad=True)
    mg.checkpoint(model, x).sum().backward()
    after_ckpt = mg.random.default_generator().random()
    mg.random.manual_seed(5)
    model = blocks(3, dropout=0.5)
    model(Tensor(np.ones((2, 8)), requires_grad=True)).sum().backward()
    assert after_ckpt == mg.random.default_generator().random()


def test_gradcheck_through_a_checkpoint():
    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=(3, 4)), requires_grad=True)
    w = Tensor(rng.normal(size=(4, 4)), requires_grad=True)   # captured by fn, not passed
    b = Tensor(rng.normal(size=(4,)), requires_grad=True)
    fn = lambda x, b: mg.checkpoint(lambda h, c: ((h @ w).tanh() + c).sigmoid(), x, b)
    assert mg.gradcheck(fn, x, b)
    assert mg.gradcheck(lambda w_: mg.checkpoint(lambda h: (h @ w_).tanh(), x), w)


def test_grad_reaches_captured_parameters_without_touching_dot_grad():
    model = blocks(3)
    x = Tensor(np.ones((2, 8)))                       # the input needs no grad
    out = mg.checkpoint(model, x)
    assert out.op == "checkpoint"
    params = model.parameters()
    assert len(out.parents) == 1 + len(params)        # x, then every parameter
    gs = mg.grad(out.sum(), params)
    assert all(p.grad is None for p in params)
    ref = mg.grad(model(x).sum(), params)
    for g, r in zip(gs, ref):
        np.testing.assert_array_equal(g.data, r.data)


def test_retain_graph_lets_backward_run_twice_through_checkpoint():
    model = blocks(2)
    x = Tensor(np.ones((2, 8)), requires_grad=True)
    loss = mg.checkpoint(model, x).sum()
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    loss.backward()
    np.testing.assert_allclose(x.grad, 2 * first, rtol=1e-12)


def test_checkpoint_sequential_is_a_chain_of_checkpoints_that_retain_graph_keeps():
    model = blocks(4)
    x = Tensor(np.ones((2, 8)), requires_grad=True)
    loss = mg.checkpoint_sequential(model, 2, x).sum()
    assert [n.name for n in mg.topological_order(loss) if n.name == "checkpoint"] == ["checkpoint"] * 2
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    loss.backward()                      # the kept graph recomputes again
    np.testing.assert_allclose(x.grad, 2 * first)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()                  # now it was freed


def test_under_no_grad_checkpoint_just_calls_fn():
    model = blocks(2)
    with mg.no_grad():
        out = mg.checkpoint(model, Tensor(np.ones((2, 8)), requires_grad=True))
    assert out.grad_fn is None and out.op != "checkpoint"


def test_non_tensor_arguments_pass_through():
    x = Tensor(np.arange(4.0), requires_grad=True)
    y = mg.checkpoint(lambda t, scale, power: (t * scale) ** power, x, 3.0, 2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * 9.0 * x.data)


@needs_torch
def test_matches_torch_utils_checkpoint():
    from torch.utils.checkpoint import checkpoint_sequential as torch_ckpt_seq

    model = blocks(4, act=nn.ReLU)
    xv = np.random.default_rng(3).normal(size=(5, 8))
    x = Tensor(xv, requires_grad=True)
    (mg.checkpoint_sequential(model, 2, x) ** 2).sum().backward()

    tlayers = []
    for blk in model:
        lin = torch.nn.Linear(8, 8).double()
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(blk[0].weight.data.T))
            lin.bias.copy_(torch.from_numpy(blk[0].bias.data))
        tlayers += [lin, torch.nn.ReLU()]
    tmodel = torch.nn.Sequential(*tlayers)
    tx = torch.tensor(xv, requires_grad=True)
    (torch_ckpt_seq(tmodel, 2, tx, use_reentrant=False) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model[0][0].weight.grad, tlayers[0].weight.grad.numpy().T,
                               rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ errors

def test_bad_input_gets_a_clear_error():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match="checkpoint: fn must be callable"):
        mg.checkpoint(3, x)
    with pytest.raises(TypeError, match="must return one Tensor"):
        mg.checkpoint(lambda t: (t, t), x)
    with pytest.raises(ValueError, match="determinism_check"):
        mg.checkpoint(lambda t: t * 2, x, determinism_check="maybe")
    h = x * 2                                                    # not a leaf
    with pytest.raises(ValueError, match="pass it to checkpoint as an argument"):
        mg.checkpoint(lambda t: t * h, x)
    with pytest.raises(ValueError, match=r"checkpoint_sequential: segments must be .* in \[1, 3\]"):
        mg.checkpoint_sequential(blocks(3), 4, x)
    with pytest.raises(ValueError, match="got 2.5"):
        mg.checkpoint_sequential(blocks(3), 2.5, x)
    with pytest.raises(ValueError, match="plan is for 5 layers but there are 3"):
        mg.checkpoint_sequential(blocks(3), uniform_plan(5, 2), x)
    with pytest.raises(ValueError, match="got no layers"):
        mg.checkpoint_sequential([], 1, x)


def test_double_backward_through_a_checkpoint_is_refused():
    x = Tensor(np.ones(3), requires_grad=True)
    y = mg.checkpoint(lambda t: (t * t).sum(), x)
    with pytest.raises(RuntimeError, match="create_graph"):
        mg.grad(y, x, create_graph=True)


def test_changing_a_parameter_before_backward_is_caught():
    model = blocks(2)
    x = Tensor(np.ones((2, 8)), requires_grad=True)
    loss = mg.checkpoint(model, x).sum()
    with mg.no_grad():
        model[0][0].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_a_function_that_reads_changing_state_is_caught():
    state = {"scale": 1.0}
    x = Tensor(np.ones(3), requires_grad=True)
    y = mg.checkpoint(lambda t: t * state["scale"], x).sum()
    state["scale"] = 2.0
    with pytest.raises(RuntimeError, match="different values"):
        y.backward()
    assert x.grad is None  # nothing half-updated


# ------------------------------------------------------ memory and compute

def test_forward_keeps_only_the_segment_inputs():
    n, k, batch, width = 8, 4, 16, 8
    model = blocks(n, width=width)
    x = Tensor(np.ones((batch, width)), requires_grad=True)
    with MemoryProfiler(model) as prof:
        with prof.phase("forward"):
            out = mg.checkpoint_sequential(model, k, x)
        saved = prof.timeline.at_end("forward").by_category["saved activations"]
        del out
    # the k segment inputs, x among them (made before profiling, counted as the activation it became)
    assert saved == k * batch * width * 8


def test_extra_forward_work_is_exactly_one_forward_pass():
    n = 6
    model = blocks(n)
    x = Tensor(np.ones((2, 8)), requires_grad=True)
    with mg.count_ops() as plain:
        model(x).sum().backward()
    with mg.count_ops() as ckpt:
        mg.checkpoint_sequential(model, 3, x).sum().backward()
    assert plain.forward["matmul"] == n and ckpt.forward["matmul"] == 2 * n
    assert ckpt.forward["checkpoint"] == 3
    with mg.count_ops() as last:
        mg.checkpoint_sequential(model, 3, x, keep_last=True).sum().backward()
    assert last.forward["matmul"] == n + 4   # the last segment (2 blocks) is not recomputed


# ----------------------------------------------------------------- planner

def brute_force(n, a, b, c, budget):
    """Every composition of n into segments, every recompute/store choice."""
    best_cost, best_peak = math.inf, math.inf
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = (0,) + tuple(i + 1 for i, cut in enumerate(cuts) if cut) + (n,)
        for flags in itertools.product([False, True], repeat=len(bounds) - 1):
            r = simulate_plan(Plan(bounds, flags), a, b, c)
            best_peak = min(best_peak, r["peak"])
            if r["peak"] <= budget:
                best_cost = min(best_cost, r["recompute"])
    return best_cost, best_peak


@pytest.mark.parametrize("seed", range(12))
def test_planner_is_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    a = rng.integers(1, 6, size=n).tolist()
    b = rng.integers(1, 4, size=n).tolist()
    c = rng.integers(1, 4, size=n).tolist()
    _, lowest = brute_force(n, a, b, c, math.inf)
    assert min_peak(n, a, b) == lowest
    for budget in sorted({lowest, lowest + 1, lowest + 3, sum(a), 2 * sum(a)}):
        cost, _ = brute_force(n, a, b, c, budget)
        plan = plan_segments(n, budget, act=a, out=b, cost=c)
        got = simulate_plan(plan, a, b, c)
        assert got["peak"] <= budget
        assert got["recompute"] == cost


def test_planner_with_a_big_budget_recomputes_nothing_and_refuses_too_small_ones():
    plan = plan_segments(10, 10)
    assert not any(plan.recompute)
    with pytest.raises(ValueError, match="smallest peak any schedule reaches is"):
        plan_segments(64, 5)


def test_sqrt_rule_and_its_memory_model():
    plan = sqrt_plan(64)
    assert plan.k == 8 and plan.boundaries == tuple(range(0, 65, 8)) and all(plan.recompute)
    for k in (1, 3, 8, 64):
        m = max(e - s for s, e, _ in uniform_plan(64, k).segments)
        got = simulate_plan(uniform_plan(64, k), [25] * 64, [8] * 64)
        assert got == {"peak": 8 * k + 25 * m, "recompute": 64}


def test_revolve_matches_the_binomial_closed_form():
    for s in range(1, 6):
        for n in range(1, 40):
            r = next(r for r in itertools.count(1) if binomial_reach(s, r) >= n)
            assert revolve_forward_steps(n, s) == r * n - math.comb(s + r, s + 1)
    assert revolve_forward_steps(10, 1) == 45     # one slot: restart from the input every time
    assert revolve_forward_steps(10, 9) == 9      # enough slots: one sweep


def test_measured_peaks_follow_the_planners_memory_model():
    # A block (Linear + ReLU) keeps 8 bytes per element of a (B, W) array: ReLU's output,
    # as in PyTorch (the next matmul would save the same array); a checkpoint keeps 8.
    # Measured with the weights frozen, above everything that existed before the step,
    # the peak is the model's plus a few arrays of gradients in flight, for equal, mixed
    # and stored plans.
    n, batch, width = 12, 64, 32
    model = blocks(n, width=width, act=nn.ReLU)
    for p in model.parameters():
        p.requires_grad = False
    x = Tensor(np.random.default_rng(0).normal(size=(batch, width)), requires_grad=True)
    array = batch * width * 8
    plans = [uniform_plan(n, k) for k in (1, 2, 3, 4, 6, 12)] + [
        Plan((0, 5, 9, 12), (True, False, True)), Plan((0, 4, 12), (True, False)),
        Plan((0, 3, 6, 12), (False, True, False)), uniform_plan(n, 3, recompute=False)]
    for plan in plans:
        x.grad = None
        with MemoryProfiler(every_op=False) as prof:
            with prof.phase("forward"):
                out = mg.checkpoint_sequential(model, plan, x).sum()
            with prof.phase("backward"):
                out.backward()
            del out
            prof.sample("after the step")
        # the weights and x are found as inputs when first read: count from all of them
        before = prof.timeline.samples[-1].total - x.grad.nbytes
        measured = prof.timeline.peak() - before
        predicted = simulate_plan(plan, [8] * n, [8] * n)["peak"] * batch * width
        assert 2 * array <= measured - predicted <= 7 * array, (plan, measured / array, predicted / array)


def test_selective_recomputation_keeps_the_matmuls_and_recomputes_the_rest():
    model = blocks(4, width=8, act=nn.Tanh)
    x = Tensor(np.random.default_rng(0).normal(size=(5, 8)), requires_grad=True)
    model(x).sum().backward()
    want = [p.grad.copy() for p in model.parameters()] + [x.grad.copy()]
    for p in [*model.parameters(), x]:
        p.grad = None
    policy = mg.checkpointing.save_ops("matmul")
    with mg.count_ops() as ops:
        y = mg.checkpoint(model, x, policy=policy)
        (node,) = [n for n in mg.topological_order(y) if n.name == "checkpoint"]
        kept = [a for a in node.kept if a is not None]
        assert len(kept) == 4 and all(a.shape == (5, 8) for a in kept)   # one matmul output per block
        y.sum().backward()
    # the matmuls ran once (forward) and were reused in the recomputation; tanh ran twice
    assert ops.forward["matmul"] == 4 and ops.forward["tanh"] == 8
    got = [p.grad for p in model.parameters()] + [x.grad]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with mg.count_ops() as full:
        mg.checkpoint(model, x).sum().backward()
    assert full.forward["matmul"] == 8 and full.forward["tanh"] == 8


def test_a_policy_must_be_callable():
    with pytest.raises(TypeError, match="checkpoint: policy must be callable"):
        mg.checkpoint(lambda t: t * 2, Tensor([1.0], requires_grad=True), policy="matmul")
