"""Measured memory: categories add up, each category is what it says, peaks catch scratch."""

import gc
import tracemalloc

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, nn
from minigrad.function import _state
from minigrad.memory import CATEGORIES, MemoryProfiler, nbytes, profile_step


def setup(batch=16, width=32, depth=3, dtype=None, seed=0):
    mg.random.manual_seed(seed)
    model = nn.MLP([width] * depth + [10], dtype=dtype)
    rng = np.random.default_rng(seed)
    x = Tensor(rng.normal(size=(batch, width)), dtype=dtype)
    y = rng.integers(0, 10, size=batch)
    return model, x, y


def param_bytes(model):
    return sum(p.data.nbytes for p in model.parameters())


def test_categories_add_up_to_the_measured_total_at_every_sample():
    model, x, y = setup()
    opt = mg.optim.Adam(model.parameters())
    tl = profile_step(model, x, y, optimizer=opt)
    assert len(tl) > 20
    for s in tl.samples:
        assert set(s.by_category) == set(CATEGORIES)
        assert sum(s.by_category.values()) == s.total
        assert s.by_category["temporaries"] >= 0
        assert s.peak >= s.total


def test_parameters_are_the_sum_of_their_nbytes_and_adam_state_is_twice_that():
    for dtype in (np.float64, np.float32):
        model, x, y = setup(dtype=dtype)
        opt = mg.optim.Adam(model.parameters())
        tl = profile_step(model, x, y, optimizer=opt)
        end = tl.samples[-1].by_category
        assert end["parameters"] == param_bytes(model)
        assert end["gradients"] == param_bytes(model)
        assert end["optimizer state"] == 2 * param_bytes(model) == opt.state_nbytes()
        assert all(s.by_category["parameters"] == param_bytes(model) for s in tl.samples)


def test_sgd_without_momentum_has_no_state_and_with_momentum_one_copy():
    for momentum, copies in ((0.0, 0), (0.9, 1)):
        model, x, y = setup()
        opt = mg.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
        tl = profile_step(model, x, y, optimizer=opt)
        assert tl.samples[-1].by_category["optimizer state"] == copies * param_bytes(model)


def test_saved_activations_are_what_the_graph_saved_and_are_released_by_backward():
    model, x, y = setup(depth=4)
    tl = profile_step(model, x, y)
    fwd = tl.at_end("forward").by_category
    # The first matmul saves the batch x (made before profiling: counted as the
    # activation it becomes); each ReLU saves its output, which the next matmul
    # saves too (one buffer); the loss saves its log-probabilities, its row
    # indices and the labels (made before profiling too, like x).
    # The weights that the matmuls save are parameters, never activations.
    batch, width, hidden = 16, 32, 3
    expected = (batch * width * 8                # x, saved by the first matmul
                + hidden * batch * width * 8     # relu outputs
                + batch * 10 * 8                 # the log-probabilities, saved by the loss
                + batch * 8                      # the loss's row index (an int64 arange)
                + batch * 8)                     # the labels y, which the loss keeps
    assert y.dtype == np.int64 and fwd["saved activations"] == expected
    assert fwd["inputs"] == 0
    back = tl.at_end("backward").by_category
    assert back["saved activations"] == 0
    # as in PyTorch, the graph keeps no output alive: only the loss, which profile_step holds;
    # x and y, no longer saved, are the caller's inputs
    assert back["graph outputs"] == 8 and back["inputs"] == x.data.nbytes + y.nbytes
    assert tl.at_end("free graph").by_category["graph outputs"] == 0


def test_a_known_allocation_is_measured_exactly_and_scratch_shows_in_the_peak():
    with MemoryProfiler() as prof:
        with prof.phase("allocate"):
            kept = np.ones(1000)
        with prof.phase("scratch"):
            total = np.ones(2 ** 17).sum()   # 1 MiB made and freed inside the phase
    tl = prof.timeline
    assert tl.at_end("allocate").total - tl.samples[0].total == kept.nbytes
    assert tl.at_end("allocate").by_category["temporaries"] == kept.nbytes
    assert tl.peak("scratch") - tl.at_end("scratch").total >= 2 ** 20
    assert total == 2 ** 17


def test_inference_peak_is_far_below_training_peak():
    model, x, y = setup(batch=64, depth=12)
    train = profile_step(model, x, y, every_op=False)
    infer = profile_step(model, x, y, train=False, every_op=False)
    assert all(s.by_category["saved activations"] == 0 for s in infer.samples)
    assert infer.peak() < train.peak()
    rise = lambda tl: tl.peak("forward") - tl.samples[0].total
    # training keeps one array per layer until backward, inference a few at a time
    assert rise(infer) < rise(train) / 2, (rise(infer), rise(train))


def test_sampling_only_at_phase_ends_measures_the_same_peaks():
    model, x, y = setup(batch=64, depth=5)
    fine = profile_step(model, x, y, every_op=True)
    coarse = profile_step(model, x, y, every_op=False)
    assert len(coarse) == 4
    for name, start, end in fine.phases[:2]:
        assert coarse.at_end(name).total == fine.at_end(name).total
        # The coarse peak also counts the graph's Python objects made during the
        # phase (well under 1 KiB per op); the fine one only those of one op.
        assert abs(coarse.peak(name) - fine.peak(name)) <= 1024 * (end - start)


def test_nbytes_counts_each_buffer_once():
    a = np.ones(100)
    assert nbytes([a, a[10:], Tensor(np.ones(5))]) == 800 + 40


def test_refuses_to_share_tracemalloc_and_cleans_up():
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="already tracing"):
            with MemoryProfiler():
                pass
    finally:
        tracemalloc.stop()
    with pytest.raises(ZeroDivisionError):
        with MemoryProfiler():
            raise ZeroDivisionError("inside the profiler")
    assert not tracemalloc.is_tracing() and _state.hooks == () and gc.isenabled()


def test_bad_input_and_bad_questions_get_clear_errors():
    with pytest.raises(TypeError, match="not a Tensor"):
        MemoryProfiler([np.ones(3)])
    with pytest.raises(TypeError, match="has no .state"):
        MemoryProfiler(optimizer=object())
    prof = MemoryProfiler()
    with pytest.raises(RuntimeError, match="inside `with MemoryProfiler"):
        with prof.phase("x"):
            pass
    model, x, y = setup()
    tl = profile_step(model, x, y)
    with pytest.raises(KeyError, match="no phase named 'step'"):
        tl.peak("step")
    with pytest.raises(KeyError, match="unknown category"):
        tl.category("weights")
