"""minigrad.compile: a whole step as one program, equal to eager after each call; guards, breaks, refusals."""

import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad as mg
from minigrad import Tensor
from minigrad.compiling import CompileError, GraphBreak


def make_setup(opt_cls, dtype, dropout=0.0, seed=0, **opt_kw):
    """A fresh MLP, optimizer and eager step function on a fixed batch."""
    rng = np.random.default_rng(seed)
    layers = [mg.nn.Linear(6, 8, rng=rng, dtype=dtype), mg.nn.ReLU()]
    if dropout:
        layers.append(mg.nn.Dropout(dropout))
    layers.append(mg.nn.Linear(8, 3, rng=rng, dtype=dtype))
    model = mg.nn.Sequential(*layers)
    opt = opt_cls(model.parameters(), **opt_kw)
    x = Tensor(rng.standard_normal((5, 6)), dtype=dtype)
    y = rng.integers(0, 3, size=5)

    def step():
        opt.zero_grad()
        loss = model(x).cross_entropy_with_logits(y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def state_arrays(opt):
    out = []
    for i in sorted(opt.state):
        for k in sorted(opt.state[i]):
            out.append((i, k, np.asarray(opt.state[i][k])))
    return out + [("steps", "", np.asarray(opt.steps))]


OPTIMIZERS = [
    (mg.optim.SGD, {"lr": 0.1}),
    (mg.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-3}),
    (mg.optim.Adam, {"lr": 0.01}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("opt_cls, kw", OPTIMIZERS, ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_every_call_leaves_what_eager_leaves(opt_cls, kw, dtype, dropout):
    m1, o1, eager = make_setup(opt_cls, dtype, dropout, **kw)
    m2, o2, step = make_setup(opt_cls, dtype, dropout, **kw)
    compiled = mg.compile(step)
    gen = mg.random.default_generator()
    for k in range(30):
        mg.random.manual_seed(k)
        a = eager()
        mg.random.manual_seed(k)
        b = compiled()
        assert a.data.dtype == b.data.dtype == dtype
        np.testing.assert_array_equal(a.data, b.data, err_msg=f"loss of call {k}")
        for p, q in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_array_equal(p.data, q.data, err_msg=f"parameter after call {k}")
            np.testing.assert_array_equal(p.grad, q.grad, err_msg=f"gradient after call {k}")
            assert p.grad.dtype == q.grad.dtype == dtype
        for (i, key, s), (j, key2, t) in zip(state_arrays(o1), state_arrays(o2), strict=True):
            assert (i, key) == (j, key2)
            np.testing.assert_array_equal(s, t, err_msg=f"optimizer state {i} {key} after call {k}")
    assert len(compiled.captures) == 1 and compiled.captures[0].reason == "first call"
    assert gen is mg.random.default_generator()


def test_the_program_is_straight_line_code_of_forward_backward_and_update():
    _, _, step = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    compiled = mg.compile(step)
    compiled()
    code = compiled.code
    assert code.startswith("def step():\n    if not (_st.grad_enabled is True")
    assert "for " not in code and "while " not in code
    for line in ["@", "exp(", ".T @", ".grad = None", ".steps += 1", "-= _lr * "]:
        assert line in code, line
    assert code.index("_logp =") < code.index(".T @") < code.index(".steps += 1")
    counts = compiled.program.op_counts()
    assert counts["matmul"] == 2 and counts["matmul_vjp"] == 2 and counts["step"] == 1


def test_later_calls_build_no_graph_and_run_no_engine():
    model, _, step = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    compiled = mg.compile(step)
    compiled()
    import minigrad.engine as engine
    calls = []
    plain = engine._run
    engine._run = lambda *a: calls.append(a) or plain(*a)
    try:
        loss = compiled()
    finally:
        engine._run = plain
    assert calls == [] and loss.grad_fn is None
    assert all(p.grad_fn is None for p in model.parameters())


def test_hyperparameters_are_read_at_run_time():
    m1, o1, eager = make_setup(mg.optim.Adam, np.float64, lr=0.01)
    m2, o2, step = make_setup(mg.optim.Adam, np.float64, lr=0.01)
    compiled = mg.compile(step)
    for k in range(6):
        if k == 3:
            o1.lr = o2.lr = 0.1
            o1.b1 = o2.b1 = 0.5
        eager(), compiled()
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    assert len(compiled.captures) == 1


def test_gradients_accumulate_when_the_step_does_not_zero_them(rng):
    w1 = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    w2 = Tensor(w1.data.copy(), requires_grad=True)
    x = rng.standard_normal((4, 3))

    def make(w):
        return lambda: (Tensor(x) @ w).tanh().sum().backward()

    compiled = mg.compile(make(w2))
    for _ in range(4):
        make(w1)()
        compiled()
        np.testing.assert_array_equal(w1.grad, w2.grad)


def test_inputs_given_each_call_are_read_each_call(rng):
    m1, o1, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    m2, o2, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)

    def make(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = model(x).cross_entropy_with_logits(y)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make(m1, o1), mg.compile(make(m2, o2))
    for _ in range(5):
        x = rng.standard_normal((5, 6))
        y = rng.integers(0, 3, size=5)
        a = eager(x, y)                  # an array input
        b = compiled(x, y)
        np.testing.assert_array_equal(a.data, b.data)
        a = eager(Tensor(x), y)          # a Tensor input: a new guard, one more capture
        b = compiled(Tensor(x), y)
        np.testing.assert_array_equal(a.data, b.data)
    assert len(compiled.captures) == 2
    assert "argument 0: array (5, 6) float64 -> Tensor (5, 6) float64" in compiled.captures[1].reason


def guard_setup():
    model, opt, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (model(x) * SCALE).sum()
        loss.backward()
        opt.step()
        return loss

    return model, step


SCALE = 1.0


def test_a_failing_guard_recaptures_and_says_why(rng):
    global SCALE
    model, step = guard_setup()
    compiled = mg.compile(step)
    x4, x7 = Tensor(rng.standard_normal((4, 6))), Tensor(rng.standard_normal((7, 6)))
    compiled(x4)
    compiled(x4)
    assert len(compiled.captures) == 1
    compiled(x7)                                        # a new batch size
    assert "argument 0: Tensor (4, 6) float64 -> Tensor (7, 6) float64" in compiled.captures[-1].reason
    compiled(x4)                                        # the first program is still cached
    assert len(compiled.captures) == 2
    compiled(Tensor(x4.data, dtype=np.float32))         # a new dtype
    assert "float32" in compiled.captures[-1].reason
    SCALE = 2.0                                         # a global number the step reads
    try:
        expected = (model(x4) * 2.0).sum().data   # what eager computes with SCALE = 2
        np.testing.assert_array_equal(compiled(x4).data, expected)
        assert "global SCALE was 1.0, now 2.0" in compiled.captures[-1].reason
    finally:
        SCALE = 1.0
    model[2].bias.requires_grad = False                 # which tensors require grad
    compiled(x4)
    assert "requires_grad" in compiled.captures[-1].reason
    with mg.no_grad():                                  # grad mode
        with pytest.raises(RuntimeError):
            compiled(x4)  # eager raises too: backward without a graph
    assert "grad mode is off" in compiled.captures[-1].reason
    assert compiled.captures[-1].program is None and "raised" in compiled.captures[-1].breaks[0]
    assert len(compiled.captures) == 6


def test_dropout_draws_fresh_masks_and_its_mode_is_guarded():
    drop = mg.nn.Dropout(0.5)
    w = Tensor(np.ones((1, 50)), requires_grad=True)

    def step():
        w.grad = None
        out = drop(w * 1.0)
        out.sum().backward()
        return out

    compiled = mg.compile(step)
    masks = [compiled().data.copy() for _ in range(4)]
    assert all(not np.array_equal(masks[0], m) for m in masks[1:])   # a new mask every call
    np.testing.assert_array_equal(w.grad, masks[-1])                  # and backward used it
    assert len(compiled.captures) == 1
    drop.eval()
    np.testing.assert_array_equal(compiled().data, np.ones((1, 50)))  # eval: recaptured, no mask
    assert "dropout" in compiled.captures[-1].reason


def test_a_graph_break_is_an_error_naming_the_line():
    model, opt, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        if loss.item() > 0:   # a value leaves the graph: Python decides
            loss = loss * 2.0
        loss.backward()
        opt.step()
        return loss

    compiled = mg.compile(step)
    with pytest.raises(GraphBreak, match=r"(?s)graph break.*test_compiling.py:\d+ in step.*loss.item\(\)"):
        compiled(Tensor(np.ones((2, 6))))
    assert compiled.captures[0].breaks and compiled.program is None


@pytest.mark.parametrize("read", ["item", "bool", "numpy", "data", "grad"])
def test_on_break_eager_warns_and_runs_eagerly(read):
    m1, o1, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    m2, o2, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    x = Tensor(np.linspace(-1, 1, 12).reshape(2, 6))

    def make(model, opt):
        def step():
            opt.zero_grad()
            loss = model(x).sum()
            seen = {"item": lambda: loss.item() > 0, "bool": lambda: bool(loss > 0),
                    "numpy": lambda: loss.numpy() > 0, "data": lambda: loss.data > 0,
                    "grad": lambda: True}[read]()
            loss = loss * 2.0 if seen else loss * 3.0
            loss.backward()
            if read == "grad":
                model[0].weight.grad *= 0.5   # changed outside the graph
            opt.step()
            return loss
        return step

    eager, compiled = make(m1, o1), mg.compile(make(m2, o2), on_break="eager")
    with pytest.warns(UserWarning, match="graph break"):
        compiled()
    eager()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            eager(), compiled()   # eager from now on, silently: same numbers
    assert compiled.eager and len(compiled.captures) == 1
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(p.data, q.data)


def test_hooks_anomaly_checkpoint_and_grad_are_refused(rng):
    _, _, step = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    compiled = mg.compile(step)
    with mg.count_ops(), pytest.raises(CompileError, match="op hook is active"):
        compiled()
    with mg.detect_anomaly(), pytest.raises(CompileError, match="anomaly mode"):
        compiled()
    w = Tensor(rng.standard_normal((3, 3)), requires_grad=True)

    def with_checkpoint():
        w.grad = None
        mg.checkpoint(lambda t: (t @ w).tanh(), Tensor(np.ones((2, 3)))).sum().backward()

    with pytest.raises(CompileError, match="checkpointing inside a compiled step"):
        mg.compile(with_checkpoint)()

    def with_grad():
        (gw,) = mg.grad((Tensor(np.ones((2, 3))) @ w).sum(), [w])
        return gw

    with pytest.raises(GraphBreak, match=r"minigrad\.grad\(\) inside the step"):
        mg.compile(with_grad)()

    def inplace_on_graph():
        w.grad = None
        h = Tensor(np.ones((2, 3))) @ w
        h.add_(1.0)
        h.sum().backward()

    with pytest.raises(CompileError, match="requires grad in place"):
        mg.compile(inplace_on_graph)()


def test_an_in_place_op_outside_the_graph_is_replayed(rng):
    counter = Tensor(np.zeros(1))
    w = Tensor(rng.standard_normal(3), requires_grad=True)

    def step():
        w.grad = None
        counter.add_(1.0)          # a tensor the step keeps changing, outside the graph
        (w * counter).sum().backward()

    compiled = mg.compile(step)
    for k in range(1, 5):
        compiled()
        np.testing.assert_array_equal(counter.data, [float(k)])
        np.testing.assert_array_equal(w.grad, np.full(3, float(k)))


def test_passes_remove_dead_code_fold_constants_and_merge_repeats(rng):
    w = Tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = Tensor(rng.standard_normal((2, 3)))

    def step():
        w.grad = None
        _ = (x * 3.0).exp()                     # computed, never used: dead
        a = (x * mg.maximum(0.5, 2.0)) @ w      # an op on constants only: folded
        b = (x * 5.0).tanh()
        c = (x * 5.0).tanh()                    # the same as b, and no gradient: merged
        loss = (a + b + c).sum()
        loss.backward()
        return loss

    raw, opt = mg.compile(step, optimize=False), mg.compile(step)
    for _ in range(2):
        np.testing.assert_array_equal(raw().data, opt().data)
        g = w.grad.copy()
        step()
        np.testing.assert_array_equal(w.grad, g)
    r, o = raw.program.op_counts(), opt.program.op_counts()
    assert r["exp"] == 1 and "exp" not in o                   # dead code removed
    assert r["maximum"] == 1 and "maximum" not in o           # folded into a constant
    assert r["tanh"] == 2 and o["tanh"] == 1                  # merged
    assert r["mul"] == 4 and o["mul"] == 2
    assert "maximum" not in opt.code and "Exp_fwd" not in opt.code


def test_common_subexpressions_without_gradients_are_merged(rng):
    x = Tensor(rng.standard_normal((2, 3)))
    w = Tensor(rng.standard_normal(3), requires_grad=True)

    def step():
        w.grad = None
        m1 = (x * 2.0).exp()
        m2 = (x * 2.0).exp()                   # needs no gradient: the same value as m1
        loss = ((m1 + m2) * w).sum()
        loss.backward()
        return loss

    raw, opt = mg.compile(step, optimize=False), mg.compile(step)
    np.testing.assert_array_equal(raw().data, opt().data)
    assert raw.program.op_counts()["exp"] == 2 and opt.program.op_counts()["exp"] == 1


@needs_torch
def test_compiled_adam_follows_pytorch_over_many_steps():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 4)), rng.integers(0, 3, size=8)
    w0, b0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    w, b = Tensor(w0, requires_grad=True), Tensor(b0, requires_grad=True)
    opt = mg.optim.Adam([w, b], lr=0.05)

    def step():
        opt.zero_grad()
        loss = (Tensor(x) @ w + b).cross_entropy_with_logits(y)
        loss.backward()
        opt.step()
        return loss

    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    topt = torch.optim.Adam([tw, tb], lr=0.05)
    compiled = mg.compile(step)
    for _ in range(40):
        loss = compiled()
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(torch.tensor(x) @ tw + tb, torch.tensor(y))
        tl.backward()
        topt.step()
        np.testing.assert_allclose(loss.data, tl.item(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad, tw.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_compile_leaves_nothing_behind():
    plain = {k: Tensor.__dict__[k] for k in ("data", "grad", "shape", "__bool__", "_inplace")}
    from minigrad import capture
    from minigrad import function as fn_mod
    from minigrad import tensor as t_mod
    as_t = (fn_mod.as_tensor, t_mod.as_tensor)
    with pytest.raises(GraphBreak):
        mg.compile(lambda: Tensor(np.ones(2)).sum().item())()
    assert {k: Tensor.__dict__[k] for k in plain} == plain
    assert capture.observers == [] and (fn_mod.as_tensor, t_mod.as_tensor) == as_t
    from minigrad.function import _state
    assert _state.hooks == ()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="expected a function"):
        mg.compile(3)
    with pytest.raises(ValueError, match="on_break must be 'error' or 'eager'"):
        mg.compile(lambda: None, on_break="skip")
    with pytest.raises(RuntimeError, match="nothing captured yet"):
        _ = mg.compile(lambda: None).code


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shapes", [((4, 3), (3,)), ((4, 3), (4, 3)), ((4, 1), (1, 3)), ((2, 4, 3), (3,))])
def test_each_written_out_op_computes_what_the_op_computes(shapes, dtype):
    """add, matmul, relu and the fused loss run as NumPy lines in the program: the same bits as the ops."""
    rng = np.random.default_rng(1)
    sa, sb = shapes
    a0, b0 = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    w0 = rng.standard_normal((3, 5)).astype(dtype)
    labels = rng.integers(0, 5, size=int(np.prod((np.broadcast_shapes(sa, sb))[:-1])))

    def make():
        a, b, w = (Tensor(v, requires_grad=True, dtype=dtype) for v in (a0, b0, w0))

        def step(y):
            for t in (a, b, w):
                t.grad = None
            h = (a + b).relu()
            z = h.reshape(-1, 3) @ w
            loss = z.cross_entropy_with_logits(y) + z.cross_entropy_with_logits(labels)
            loss.backward()
            return loss
        return (a, b, w), step

    (ea, eb, ew), eager = make()
    (ca, cb, cw), step = make()
    compiled = mg.compile(step)
    for _ in range(3):
        y = rng.integers(0, 5, size=labels.size)
        le, lc = eager(y), compiled(y)
        np.testing.assert_array_equal(le.data, lc.data)
        for e, c in ((ea, ca), (eb, cb), (ew, cw)):
            np.testing.assert_array_equal(e.grad, c.grad)
            assert e.grad.dtype == c.grad.dtype
    code = compiled.code
    assert "maximum(" in code and "_check_targets(" in code and "Add_fwd" not in code


def test_labels_given_each_call_are_checked_each_call():
    w = Tensor(np.zeros((3, 4)), requires_grad=True)

    def step(y):
        w.grad = None
        (Tensor(np.ones((2, 3))) @ w).cross_entropy_with_logits(y).backward()

    compiled = mg.compile(step)
    compiled(np.array([0, 3]))
    compiled(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\]"):
        compiled(np.array([1, 4]))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\]"):
        compiled(np.array([-1, 0]))   # a negative label would index from the end: refused, as eager does


def test_the_drawing_reads_the_program_and_is_deterministic():
    from minigrad.viz import draw_program

    def run():
        _, _, step = make_setup(mg.optim.SGD, np.float64, lr=0.1)
        compiled = mg.compile(step)
        compiled()
        return draw_program(compiled.program, title="t"), compiled

    (g1, c1), (g2, _) = run(), run()
    assert g1.source == g2.source
    src = g1.source
    assert 'label="SGD.step' in src and "style=dashed" in src and "matmul_vjp" in src
    small = draw_program(c1.program, show_inputs=False).source
    assert "parameter" not in small and ".grad = None" not in small and ".grad = g" in small


def test_passes_never_share_or_fold_a_value_that_is_changed_in_place(rng):
    x = Tensor(rng.standard_normal(3))
    w = Tensor(np.ones(3), requires_grad=True)

    def step():
        w.grad = None
        a = x * 2.0
        b = x * 2.0                 # equal to a, but a is changed below: not merged
        a.add_(1.0)
        c = mg.maximum(0.5, 2.0)    # constants only, but changed below: made on every call
        c.add_(1.0)
        loss = ((a + b) * w).sum() * c
        loss.backward()
        return loss

    compiled = mg.compile(step)
    for _ in range(3):
        np.testing.assert_array_equal(compiled().data, step().data)


# ------------------------------------------------------------ one set of passes, fusion

def mlp_step_of(model, opt, x, y):
    def step():
        opt.zero_grad()
        loss = model(x).cross_entropy_with_logits(y)
        loss.backward()
        opt.step()
        return loss
    return step


def assert_same_training(make, steps=10, **compile_kw):
    """Eager and compiled copies of ``make()`` leave the same numbers after every step."""
    m1, o1, eager = make()
    m2, o2, step = make()
    compiled = mg.compile(step, **compile_kw)
    for k in range(steps):
        a, b = eager(), compiled()
        np.testing.assert_array_equal(a.data, b.data, err_msg=f"loss of call {k}")
        for p, q in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_array_equal(p.data, q.data, err_msg=f"parameter after call {k}")
            np.testing.assert_array_equal(p.grad, q.grad, err_msg=f"gradient after call {k}")
        for (i, key, s), (j, key2, t) in zip(state_arrays(o1), state_arrays(o2), strict=True):
            assert (i, key) == (j, key2)
            np.testing.assert_array_equal(s, t, err_msg=f"optimizer state {i} {key} after call {k}")
    assert len(compiled.captures) == 1
    return compiled


WITHOUT_FUSION = (mg.passes.eliminate_dead_code, mg.passes.fold_constants,
                  mg.passes.eliminate_common_subexpressions, mg.passes.eliminate_dead_code)


def test_fusion_makes_a_chain_and_its_vjps_one_statement_each_with_eager_numbers():
    def make():
        rng = np.random.default_rng(4)
        w, b, c = (Tensor(rng.standard_normal(s), requires_grad=True) for s in ((6, 8), (8,), (8,)))
        v = Tensor(rng.standard_normal((8, 3)), requires_grad=True)
        opt = mg.optim.SGD([w, b, c, v], lr=0.1)
        x, y = Tensor(rng.standard_normal((5, 6))), rng.integers(0, 3, size=5)

        def step():
            opt.zero_grad()
            h = (x @ w + b + c).relu()          # add, add, relu: one chain
            loss = (h @ v).cross_entropy_with_logits(y)
            loss.backward()
            opt.step()
            return loss
        return mg.nn.Sequential(), opt, step

    fused = assert_same_training(make)
    plain = assert_same_training(make, optimize=WITHOUT_FUSION)
    counts = fused.program.op_counts()
    assert counts["fused[add,add,relu]"] == 1 and counts["fused[add,add,relu]_vjp"] == 1
    assert "add" not in counts and "relu" not in counts and "relu_vjp" not in counts
    assert len(fused.program.instrs) == len(plain.program.instrs) - 4   # two ops and two VJPs fewer
    assert "fused" not in "".join(plain.program.op_counts())
    assert "# fused[add,add,relu]" in fused.code


def test_fusion_leaves_a_value_used_twice_and_joins_chains_that_meet(rng):
    w = Tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = Tensor(rng.standard_normal(3), requires_grad=True)
    x = Tensor(rng.standard_normal((5, 4)))
    y = rng.integers(0, 3, size=5)

    def step():
        w.grad = b.grad = None
        z = x @ w
        a = (z + b).relu()                     # z is used twice: it stays a value of its own
        c = (z + b).relu() + a                 # merged with a by CSE, then a is used twice
        loss = (c + z).cross_entropy_with_logits(y)
        loss.backward()
        return loss

    compiled = mg.compile(step)
    for _ in range(3):
        loss = compiled()
        gw, gb = w.grad.copy(), b.grad.copy()
        np.testing.assert_array_equal(loss.data, step().data)
        np.testing.assert_array_equal(gw, w.grad)
        np.testing.assert_array_equal(gb, b.grad)
    assert compiled.program.op_counts()["matmul"] == 1


def test_the_same_passes_rewrite_a_traced_graph_and_a_compiled_program():
    _, _, step = make_setup(mg.optim.SGD, np.float64, lr=0.1)
    raw = mg.compile(step, optimize=False)
    raw()
    program = raw.program
    g = mg.trace(lambda x, w, b: (x @ w + b).relu().sum(), np.ones((2, 3)), np.ones((3, 4)), np.ones(4))
    for p in (mg.passes.eliminate_dead_code, mg.passes.fold_constants,
              mg.passes.eliminate_common_subexpressions, mg.passes.fuse_elementwise, mg.passes.optimize):
        assert type(p(program)) is mg.compiling.Program and type(p(g)) is mg.StaticGraph
    assert [n.name for n in mg.passes.fuse_elementwise(g).nodes] == ["matmul", "fused[add,relu]", "sum"]
    assert "fused[add,relu]" in mg.passes.fuse_elementwise(program).op_counts()
    assert program.fuse_elementwise().op_counts() == mg.passes.fuse_elementwise(program).op_counts()
    assert "fused" not in "".join(program.op_counts())          # the passes return new programs
    assert program.eliminate_dead_code().instrs == mg.passes.eliminate_dead_code(program).instrs


def test_a_fused_chain_that_needs_no_gradient_has_no_vjp(rng):
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    x, b = Tensor(rng.standard_normal((4, 3))), Tensor(rng.standard_normal(3))

    def step():
        w.grad = None
        h = (x + b + b).relu()                 # data only: no gradient flows through the chain
        (h @ w).cross_entropy_with_logits(np.array([0, 1, 1, 0])).backward()

    compiled = mg.compile(step)
    for _ in range(2):
        compiled()
        g = w.grad.copy()
        step()
        np.testing.assert_array_equal(g, w.grad)
    counts = compiled.program.op_counts()
    assert counts["fused[add,add,relu]"] == 1 and "fused[add,add,relu]_vjp" not in counts


# -------------------------------------------------------------- written-out lines

def test_a_result_goes_into_an_array_only_where_that_array_is_read_for_the_last_time(rng):
    w = Tensor(rng.standard_normal((4, 6)), requires_grad=True)
    b, c = (Tensor(rng.standard_normal(6), requires_grad=True) for _ in range(2))
    v = Tensor(rng.standard_normal((6, 3)), requires_grad=True)
    x, y = Tensor(rng.standard_normal((5, 4))), rng.integers(0, 3, size=5)

    def step():
        for t in (w, b, c, v):
            t.grad = None
        z = x @ w
        h = (z + b).relu() + (z + c).relu()     # z is read twice: the first add must not overwrite it
        loss = (h @ v).cross_entropy_with_logits(y) + (z @ v).cross_entropy_with_logits(y)
        loss.backward()
        return loss

    compiled = mg.compile(step)
    for _ in range(3):
        loss = compiled()
        got = [t.grad.copy() for t in (w, b, c, v)]
        np.testing.assert_array_equal(loss.data, step().data)
        for g, t in zip(got, (w, b, c, v)):
            np.testing.assert_array_equal(g, t.grad)
    code = compiled.code
    z = next(i.out[0] for i in compiled.program.instrs if i.kind == "op" and i.fn is mg.ops.MatMul)
    assert f"out={z})" not in code, "z is read again after each add: never overwritten"
    assert "out=" in code


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_row_maxima_taken_column_by_column_give_the_ops_bits(dtype):
    """Logits with many rows and few columns take each row's maximum column by column."""
    rng = np.random.default_rng(2)
    z0 = rng.standard_normal((40, 6)).astype(dtype)
    z0[0, :2] = [0.0, -0.0]                     # rows whose maximum is a tie of +0 and -0
    z0[0, 2:] = -1.0
    z0[1, :2] = [-0.0, 0.0]
    z0[1, 2:] = -3.0
    y = rng.integers(0, 6, size=40)

    def make():
        z = Tensor(z0.copy(), requires_grad=True, dtype=dtype)

        def step():
            z.grad = None
            loss = z.cross_entropy_with_logits(y)
            loss.backward()
            return loss
        return z, step

    (ze, eager), (zc, step) = make(), make()
    compiled = mg.compile(step)
    for _ in range(3):
        a, b = eager(), compiled()
        assert a.data.tobytes() == b.data.tobytes() and a.data.dtype == b.data.dtype == dtype
        assert ze.grad.tobytes() == zc.grad.tobytes()
    assert ".T.copy(), axis=0)" in compiled.code


def big_setup(opt_cls, **kw):
    """Layers larger than the optimizers' blocks: eager updates them block by block."""
    rng = np.random.default_rng(7)
    model = mg.nn.Sequential(mg.nn.Linear(120, 80, rng=rng), mg.nn.ReLU(), mg.nn.Linear(80, 4, rng=rng))
    assert model[0].weight.data.size > mg.optim._BLOCK
    opt = opt_cls(model.parameters(), **kw)
    x, y = Tensor(rng.standard_normal((16, 120))), rng.integers(0, 4, size=16)
    return model, opt, mlp_step_of(model, opt, x, y)


@pytest.mark.parametrize("opt_cls, kw", [
    (mg.optim.SGD, {"lr": 0.05}),
    (mg.optim.SGD, {"lr": 0.05, "weight_decay": 1e-2}),
    (mg.optim.SGD, {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    (mg.optim.Adam, {"lr": 0.01, "weight_decay": 1e-2}),
], ids=["sgd", "sgd-decay", "nesterov", "adam-decay"])
def test_the_written_out_update_of_whole_parameters_gives_eager_bits(opt_cls, kw):
    compiled = assert_same_training(lambda: big_setup(opt_cls, **kw), steps=6)
    assert "_apply(" not in compiled.code and ".steps += 1" in compiled.code


def test_the_form_of_the_update_is_guarded_and_its_numbers_read_when_it_runs():
    m1, o1, eager = make_setup(mg.optim.SGD, np.float64, lr=0.1, momentum=0.9)
    m2, o2, step = make_setup(mg.optim.SGD, np.float64, lr=0.1, momentum=0.9)
    compiled = mg.compile(step)
    for k in range(8):
        if k == 2:
            o1.lr = o2.lr = 0.05                 # a number: read when the line runs
            o1.momentum = o2.momentum = 0.5
        if k == 4:
            o1.state.clear()                     # the buffers are gone: step() makes them again
            o2.state.clear()
        if k == 6:
            o1.momentum = o2.momentum = 0.0      # no momentum: another form of the update
        eager(), compiled()
        for p, q in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_array_equal(p.data, q.data, err_msg=f"after call {k}")
        for (i, key, s), (_, _, t) in zip(state_arrays(o1), state_arrays(o2), strict=True):
            np.testing.assert_array_equal(s, t, err_msg=f"state {i} {key} after call {k}")
    reasons = [c.reason for c in compiled.captures]
    assert reasons[0] == "first call" and "SGD has no state for some parameter" in reasons[1], reasons
    assert "momentum changed on -> off" in reasons[2] and len(reasons) == 3, reasons


def test_check_finite_is_checked_by_the_program_as_by_step(rng):
    w = Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    opt = mg.optim.SGD([w], lr=0.1, check_finite=True)
    x = Tensor(rng.standard_normal((4, 3)))

    def step():
        opt.zero_grad()
        loss = (x @ w).cross_entropy_with_logits(np.array([0, 1, 1, 0]))
        loss.backward()
        opt.step()
        return loss

    compiled = mg.compile(step)
    compiled(), compiled()
    assert "_check_param(" in compiled.code
    x.data[0, 0] = np.nan
    before = w.data.copy()
    with pytest.raises(ValueError, match="NaN"):
        compiled()
    np.testing.assert_array_equal(w.data, before)    # nothing updated, as eager's step()


def test_an_optimizer_without_a_written_out_update_runs_its_own(rng):
    class MySGD(mg.optim.SGD):
        """A subclass may change the update: the program calls the optimizer's own _apply."""

    def make():
        model, _, _ = make_setup(mg.optim.SGD, np.float64, lr=0.1)
        opt = MySGD(model.parameters(), lr=0.1, momentum=0.5)
        x = Tensor(np.linspace(-1, 1, 30).reshape(5, 6))
        return model, opt, mlp_step_of(model, opt, x, np.array([0, 1, 2, 1, 0]))

    compiled = assert_same_training(make, steps=4)
    assert "._apply(" in compiled.code


def test_zero_d_values_stay_arrays_and_never_receive_a_result(rng):
    """A 0-d sum of NumPy scalars is a scalar, not an array: no line may write into it."""
    w = Tensor(rng.standard_normal((4, 6)), requires_grad=True)
    x = Tensor(rng.standard_normal((5, 4)))

    def step():
        w.grad = None
        s = (x @ w).sum()
        loss = (s + s).relu() + (s * 0.5).relu()   # 0-d adds and ReLUs, fused; their gradients summed
        loss.backward()
        return loss

    compiled = mg.compile(step)
    for _ in range(3):
        loss = compiled()
        g = w.grad.copy()
        expected = step()
        assert type(loss.data) is np.ndarray and loss.data.shape == ()
        np.testing.assert_array_equal(loss.data, expected.data)
        np.testing.assert_array_equal(g, w.grad)
