"""minigrad.nn: parameters, modes, Dropout, init schemes, gradients, errors."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import minigrad
from minigrad import Tensor, gradcheck, nn

# --------------------------------------------------------------- parameters

def test_parameters_come_in_the_order_they_were_set():
    model = nn.MLP([3, 4, 2], rng=0)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    params = model.parameters()
    assert params[0] is model[0].weight and params[1] is model[0].bias
    assert params[2] is model[2].weight and params[3] is model[2].bias
    assert model.num_parameters() == 3 * 4 + 4 + 4 * 2 + 2


def test_a_shared_layer_is_counted_once():
    shared = nn.Linear(3, 3, rng=0)
    model = nn.Sequential(shared, nn.ReLU(), shared, nn.Linear(3, 1, rng=1))
    params = model.parameters()
    assert len(params) == 4
    assert len({id(p) for p in params}) == 4
    assert params[0] is shared.weight and params[1] is shared.bias


def test_a_tensor_reachable_twice_is_counted_once_and_constants_are_not_parameters():
    class Tied(nn.Module):
        def __init__(self):
            self.enc = nn.Linear(4, 2, bias=False, rng=0)
            self.dec_weight = self.enc.weight      # the same tensor again
            self.scale = Tensor(np.ones(2))        # no requires_grad: a constant

        def forward(self, x):
            return (x @ self.enc.weight) * self.scale @ self.dec_weight.T

    m = Tied()
    assert m.parameters() == [m.enc.weight]
    assert [n for n, _ in m.named_parameters()] == ["enc.weight"]


def test_zero_grad_clears_every_parameter():
    model = nn.MLP([3, 5, 2], rng=0)
    loss = model(Tensor(np.ones((2, 3)))).cross_entropy_with_logits(np.array([0, 1]))
    loss.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_train_and_eval_reach_every_submodule():
    model = nn.MLP([3, 4, 4, 2], dropout=0.5, rng=0)
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    assert sum(isinstance(m, nn.Dropout) for m in model.modules()) == 2


def test_sequential_indexing_and_repr():
    model = nn.MLP([3, 4, 2], activation="tanh", rng=0)
    assert len(model) == 3 and isinstance(model[1], nn.Tanh)
    head = model[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is model[0]
    assert repr(model) == ("Sequential(\n  (0) Linear(3, 4, bias=True)\n  (1) Tanh()\n"
                           "  (2) Linear(4, 2, bias=True)\n)")


def test_linear_computes_x_at_w_plus_b():
    lin = nn.Linear(3, 2, rng=0)
    lin.bias.data[:] = [0.5, -1.0]
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(lin(Tensor(x)).data, x @ lin.weight.data + [0.5, -1.0])
    assert nn.Linear(3, 2, bias=False, rng=0).bias is None
    assert lin.weight.shape == (3, 2)


def test_float32_layers_stay_float32():
    lin = nn.Linear(3, 2, dtype=np.float32, rng=0)
    out = lin(Tensor(np.ones((1, 3)), dtype=np.float32))
    assert lin.weight.dtype == np.float32 and out.dtype == np.float32


# ------------------------------------------------------------------ Dropout

def test_dropout_in_eval_mode_is_the_identity():
    d = nn.Dropout(0.5, generator=np.random.default_rng(0)).eval()
    x = Tensor(np.arange(12.0).reshape(3, 4))
    assert d(x) is x
    assert nn.Dropout(0.0)(x) is x  # p = 0 never drops, even in training


def test_dropout_scales_kept_units_by_one_over_keep_probability():
    p = 0.3
    d = nn.Dropout(p, generator=np.random.default_rng(0))
    x = Tensor(np.full((200, 500), 2.0), requires_grad=True)
    out = d(x)
    kept = out.data != 0
    np.testing.assert_allclose(out.data[kept], 2.0 / (1 - p))
    assert abs(kept.mean() - (1 - p)) < 0.01          # 100,000 draws: sd of the mean ~0.0015
    assert abs(out.data.mean() - 2.0) < 0.03           # the expectation is unchanged
    out.sum().backward()
    np.testing.assert_allclose(x.grad, kept / (1 - p))  # the VJP uses the same mask


def test_dropout_masks_replay_with_the_same_generator_state():
    gen = np.random.default_rng(5)
    d = nn.Dropout(0.5, generator=gen)
    x = Tensor(np.ones((4, 6)))
    state = minigrad.random.get_state(gen)
    first = d(x).data
    second = d(x).data
    assert not np.array_equal(first, second)           # a fresh mask each call
    minigrad.random.set_state(state, gen)
    np.testing.assert_array_equal(d(x).data, first)    # replayed exactly


def test_dropout_on_the_default_generator_replays_after_manual_seed():
    d = nn.Dropout(0.5)
    x = Tensor(np.ones((3, 8)))
    minigrad.random.manual_seed(11)
    a = d(x).data
    minigrad.random.manual_seed(11)
    np.testing.assert_array_equal(d(x).data, a)


def test_dropout_gradcheck_with_a_replayed_mask():
    gen = np.random.default_rng(2)
    state = minigrad.random.get_state(gen)
    d = nn.Dropout(0.4, generator=gen)

    def f(x):
        minigrad.random.set_state(state, gen)  # the same mask on every evaluation
        return d(x).tanh()

    assert gradcheck(f, Tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan")])
def test_dropout_rejects_bad_p(p):
    with pytest.raises(ValueError, match="Dropout: p must be in"):
        nn.Dropout(p)


def test_dropout_rejects_a_seed_as_generator():
    with pytest.raises(TypeError, match="Dropout: generator must be"):
        nn.Dropout(0.5, generator=3)


# --------------------------------------------------------------------- init

FAN_IN, FAN_OUT = 400, 300  # 120,000 draws: the sample variance is within ~1% of the truth


@pytest.mark.parametrize("fn, var", [
    (nn.he_normal, 2 / FAN_IN),
    (nn.he_uniform, 2 / FAN_IN),
    (nn.xavier_normal, 2 / (FAN_IN + FAN_OUT)),
    (nn.xavier_uniform, 2 / (FAN_IN + FAN_OUT)),
    (lambda i, o, rng: nn.normal(i, o, std=0.05, rng=rng), 0.05 ** 2),
])
def test_init_variances(fn, var):
    w = fn(FAN_IN, FAN_OUT, rng=np.random.default_rng(0))
    assert w.shape == (FAN_IN, FAN_OUT)
    assert abs(w.var() / var - 1) < 0.03
    assert abs(w.mean()) < 3 * np.sqrt(var / w.size) + 1e-12


def test_uniform_inits_respect_their_bounds():
    w = nn.he_uniform(50, 20, rng=0)
    assert np.abs(w).max() <= np.sqrt(6 / 50)
    w = nn.xavier_uniform(50, 20, rng=0)
    assert np.abs(w).max() <= np.sqrt(6 / 70)


def test_he_init_keeps_relu_activations_at_scale():
    # Var(x @ W) = fan_in * Var(W) * E[x^2]; ReLU halves E[x^2]; He's 2/fan_in undoes that.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 256))
    for _ in range(6):
        x = np.maximum(x @ nn.he_normal(256, 256, rng=rng), 0)
    assert 0.7 < (x ** 2).mean() < 1.4


# ------------------------------------------------------------------ gains

@needs_torch
@pytest.mark.parametrize("name, param", [("linear", None), ("sigmoid", None), ("tanh", None),
                                         ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                                         ("selu", None)])
def test_calculate_gain_matches_pytorch(name, param):
    assert nn.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param),
                                                           rel=1e-15)


def test_calculate_gain_values_and_errors():
    assert nn.calculate_gain("tanh") == 5 / 3
    assert nn.calculate_gain("relu") == np.sqrt(2)
    assert nn.calculate_gain("linear") == nn.calculate_gain("sigmoid") == nn.calculate_gain("identity") == 1
    with pytest.raises(ValueError, match="calculate_gain: unsupported nonlinearity 'gelu'; choose one of"):
        nn.calculate_gain("gelu")
    with pytest.raises(TypeError, match="calculate_gain: nonlinearity must be a name"):
        nn.calculate_gain(2.0)


GAIN = 5 / 3  # tanh's


@pytest.mark.parametrize("fn, std", [
    (nn.xavier_normal, GAIN * np.sqrt(2 / (FAN_IN + FAN_OUT))),
    (nn.xavier_uniform, GAIN * np.sqrt(2 / (FAN_IN + FAN_OUT))),
    (nn.he_normal, GAIN / np.sqrt(FAN_IN)),
    (nn.he_uniform, GAIN / np.sqrt(FAN_IN)),
])
def test_a_gain_scales_the_std_of_the_weights(fn, std):
    w = fn(FAN_IN, FAN_OUT, rng=np.random.default_rng(0), gain=GAIN)
    assert abs(w.std() / std - 1) < 0.015
    # The same draws as the default, scaled: only the standard deviation changes.
    default = fn(FAN_IN, FAN_OUT, rng=np.random.default_rng(0))
    base = 1.0 if "xavier" in fn.__name__ else np.sqrt(2)
    np.testing.assert_allclose(w, default * GAIN / base, rtol=1e-12, atol=1e-15)


def test_a_gain_scales_the_uniform_bounds():
    assert np.abs(nn.xavier_uniform(50, 20, rng=0, gain=2.0)).max() <= 2.0 * np.sqrt(6 / 70)
    assert np.abs(nn.he_uniform(50, 20, rng=0, gain=1.0)).max() <= np.sqrt(3 / 50)
    assert np.abs(nn.he_uniform(50, 20, rng=0, gain=1.0)).max() > 0.95 * np.sqrt(3 / 50)


@needs_torch
@pytest.mark.parametrize("ours, theirs, nonlinearity", [
    ("xavier_normal", "xavier_normal_", "tanh"),
    ("xavier_uniform", "xavier_uniform_", "sigmoid"),
    ("he_normal", "kaiming_normal_", "tanh"),
    ("he_uniform", "kaiming_uniform_", "relu"),
])
def test_gained_inits_have_the_std_of_pytorchs(ours, theirs, nonlinearity):
    gain = nn.calculate_gain(nonlinearity)
    w = nn.init_weights(ours, FAN_IN, FAN_OUT, rng=0, gain=nonlinearity)  # a name is looked up
    t = torch.empty(FAN_OUT, FAN_IN)  # PyTorch stores (out, in); fan_in is its size(1)
    torch.manual_seed(0)
    if theirs.startswith("kaiming"):
        getattr(torch.nn.init, theirs)(t, nonlinearity=nonlinearity)
        expected = gain / np.sqrt(FAN_IN)
    else:
        getattr(torch.nn.init, theirs)(t, gain=gain)
        expected = gain * np.sqrt(2 / (FAN_IN + FAN_OUT))
    assert abs(w.std() / expected - 1) < 0.015
    assert abs(t.std().item() / expected - 1) < 0.015


def test_linear_and_mlp_pass_the_gain_to_every_layer():
    lin = nn.Linear(FAN_IN, FAN_OUT, init="xavier", rng=0, gain="tanh")
    np.testing.assert_allclose(lin.weight.data, nn.xavier_normal(FAN_IN, FAN_OUT, rng=0, gain=GAIN),
                               rtol=0, atol=0)
    model = nn.MLP([FAN_IN, FAN_OUT, FAN_OUT], "tanh", init="xavier", rng=0, gain=GAIN)
    plain = nn.MLP([FAN_IN, FAN_OUT, FAN_OUT], "tanh", init="xavier", rng=0)
    for k in (0, 2):
        np.testing.assert_allclose(model[k].weight.data, plain[k].weight.data * GAIN, rtol=1e-12)
    assert np.array_equal(nn.Linear(3, 2, rng=0).weight.data, nn.he_normal(3, 2, rng=0))  # no gain: as before


def test_gain_errors():
    with pytest.raises(ValueError, match="init_weights: the 'normal' scheme takes no gain"):
        nn.init_weights("normal", 3, 2, gain=2.0)
    with pytest.raises(ValueError, match="he_normal: gain must be a positive finite number, got -1"):
        nn.he_normal(3, 2, gain=-1)
    with pytest.raises(TypeError, match="init_weights: gain must be a number or a nonlinearity's name"):
        nn.Linear(3, 2, gain=[1.0])
    with pytest.raises(ValueError, match="unsupported nonlinearity 'softplus'"):
        nn.MLP([3, 2], gain="softplus")
    calls = []
    nn.init_weights(lambda i, o, rng, **kw: calls.append(kw) or np.zeros((i, o)), 3, 2, gain=1.5)
    nn.init_weights(lambda i, o, rng: np.zeros((i, o)), 3, 2)  # no gain: a callable need not take one
    assert calls == [{"gain": 1.5}]


def test_init_by_name_and_seed_is_reproducible():
    a = nn.Linear(5, 3, init="xavier", rng=0).weight.data
    b = nn.Linear(5, 3, init="xavier", rng=np.random.default_rng(0)).weight.data
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, nn.xavier_normal(5, 3, rng=0))


def test_mlp_with_an_int_seed_draws_each_layer_from_one_stream():
    model = nn.MLP([4, 4, 4], rng=0)
    assert not np.array_equal(model[0].weight.data, model[2].weight.data)
    again = nn.MLP([4, 4, 4], rng=0)
    np.testing.assert_array_equal(model[2].weight.data, again[2].weight.data)


# ---------------------------------------------------------------- gradients

def test_linear_gradients_by_gradcheck():
    rng = np.random.default_rng(0)
    lin = nn.Linear(4, 3, rng=rng)
    lin.bias.data[:] = rng.standard_normal(3)
    x = Tensor(rng.standard_normal((5, 4)), requires_grad=True)
    assert gradcheck(lambda x, w, b: lin(x), x, lin.weight, lin.bias)


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid"])
def test_mlp_gradients_by_gradcheck(activation):
    rng = np.random.default_rng(1)
    model = nn.MLP([4, 6, 5, 3], activation=activation, init="xavier", rng=rng)
    x = Tensor(rng.standard_normal((7, 4)))
    y = np.array([0, 1, 2, 0, 1, 2, 0])
    params = model.parameters()
    assert gradcheck(lambda *ps: model(x).cross_entropy_with_logits(y), *params)


@needs_torch
def test_mlp_gradients_match_pytorch():
    rng = np.random.default_rng(3)
    model = nn.MLP([4, 6, 3], rng=rng)
    x = rng.standard_normal((5, 4))
    y = np.array([0, 2, 1, 1, 0])
    model(Tensor(x)).cross_entropy_with_logits(y).backward()

    tw = [torch.tensor(p.data, requires_grad=True) for p in model.parameters()]
    h = torch.relu(torch.tensor(x) @ tw[0] + tw[1])
    torch.nn.functional.cross_entropy(h @ tw[2] + tw[3], torch.tensor(y)).backward()
    for p, t in zip(model.parameters(), tw):
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------- errors

@pytest.mark.parametrize("args, msg", [
    ((0, 3), "Linear: in_features must be a positive integer, got 0"),
    ((3, -1), "Linear: out_features must be a positive integer, got -1"),
    ((2.5, 3), "Linear: in_features must be a positive integer, got 2.5"),
    ((True, 3), "Linear: in_features must be a positive integer, got True"),
])
def test_linear_rejects_bad_sizes(args, msg):
    with pytest.raises(ValueError, match=msg):
        nn.Linear(*args)


def test_linear_names_itself_and_the_shapes_on_a_bad_input():
    lin = nn.Linear(4, 2, rng=0)
    with pytest.raises(ValueError, match=r"Linear\(4, 2, bias=True\): expected an input whose last "
                                         r"dimension is 4, got shape \(5, 3\)"):
        lin(Tensor(np.ones((5, 3))))


@pytest.mark.parametrize("kwargs, msg", [
    (dict(sizes=[3]), "need at least an input and an output size"),
    (dict(sizes=[3, 0, 2]), r"MLP: sizes\[1\] must be a positive integer, got 0"),
    (dict(sizes=[3, 2], activation="gelu"), "unknown activation 'gelu'"),
    (dict(sizes=[3, 2], init="lecun"), "unknown scheme 'lecun'"),
    (dict(sizes=[3, 4, 2], dropout=1.0), "Dropout: p must be in"),
])
def test_mlp_rejects_bad_arguments(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        nn.MLP(**kwargs)


def test_init_errors():
    with pytest.raises(ValueError, match=r"returned shape \(2, 3\), expected .* \(3, 2\)"):
        nn.init_weights(lambda i, o, rng: np.zeros((o, i)), 3, 2)
    with pytest.raises(TypeError, match="init: rng must be a numpy.random.Generator"):
        nn.he_normal(3, 2, rng="zero")
    with pytest.raises(ValueError, match="init_weights: fan_in must be a positive integer"):
        nn.init_weights("he", 0, 2)


# ------------------------------------------------------- state_dict, as PyTorch's

def _bn_model(seed):
    return nn.Sequential(nn.Linear(3, 4, rng=seed), nn.BatchNorm1d(4), nn.ReLU(),
                         nn.Linear(4, 2, rng=seed + 1))


def _trained(seed=0):
    model = _bn_model(seed)
    rng = np.random.default_rng(seed)
    opt = minigrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        model(Tensor(rng.standard_normal((8, 3)))).cross_entropy_with_logits(rng.integers(0, 2, 8)).backward()
        opt.step()
    return model, opt


def _values(model):
    return {k: np.array(v) for k, v in model.state_dict().items()}


def test_state_dict_names_parameters_and_buffers_by_dotted_path():
    model, _ = _trained()
    sd = model.state_dict()
    assert list(sd) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                        "layers.1.running_mean", "layers.1.running_var", "layers.1.num_batches_tracked",
                        "layers.3.weight", "layers.3.bias"]
    assert sd["layers.0.weight"] is model[0].weight.data        # the module's own arrays, as PyTorch's
    count = sd["layers.1.num_batches_tracked"]
    assert count.dtype == np.int64 and int(count) == 3
    assert not np.all(sd["layers.1.running_mean"] == 0)          # the buffers have moved


def test_load_state_dict_round_trips_parameters_and_buffers():
    model, _ = _trained(0)
    fresh = _bn_model(7)
    x = Tensor(np.random.default_rng(3).standard_normal((5, 3)))
    before_w = fresh[0].weight
    keys = fresh.load_state_dict(model.state_dict())
    assert keys == ([], []) and keys.missing_keys == [] and keys.unexpected_keys == []
    assert fresh[0].weight is before_w                           # copied in place: optimizers stay valid
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k], v)
    assert fresh[1].num_batches_tracked == 3 and type(fresh[1].num_batches_tracked) is int
    model.eval(), fresh.eval()                                   # eval uses the running statistics
    np.testing.assert_array_equal(fresh(x).data, model(x).data)


def test_loading_bumps_the_version_so_stale_graphs_fail():
    model, fresh = _bn_model(0), _bn_model(1)
    loss = (fresh[0].weight * fresh[0].weight).sum()
    fresh.load_state_dict(model.state_dict())
    with pytest.raises(RuntimeError, match="version"):
        loss.backward()


@pytest.mark.parametrize("spoil, msg", [
    (lambda sd: sd.pop("layers.3.bias"), r"Missing key\(s\) in state_dict: 'layers.3.bias'"),
    (lambda sd: sd.update(extra=np.ones(2)), r"Unexpected key\(s\) in state_dict: 'extra'"),
    (lambda sd: sd.update({"layers.3.weight": np.ones((2, 4))}),
     r"size mismatch for layers.3.weight: copying a param with shape \(2, 4\) from checkpoint, the "
     r"shape in current model is \(4, 2\)"),
    (lambda sd: sd.update({"layers.1.running_var": np.ones(5)}), r"size mismatch for layers.1.running_var"),
    (lambda sd: sd.update({"layers.1.num_batches_tracked": np.array(2.5)}),
     r"'layers.1.num_batches_tracked': expected a non-negative integer"),
    (lambda sd: sd.update({"layers.0.bias": np.array(["a"] * 4)}),
     r"'layers.0.bias': expected a real numeric"),
    (lambda sd: sd.update({"layers.0.bias": np.ones(4) * 1j}), r"'layers.0.bias': expected a real numeric"),
], ids=["missing", "unexpected", "shape", "buffer-shape", "counter", "strings", "complex"])
def test_a_strict_load_that_does_not_fit_changes_nothing(spoil, msg):
    model, _ = _trained(0)
    target = _bn_model(5)
    before = _values(target)
    versions = [p._version for p in target.parameters()]
    sd = dict(model.state_dict())
    spoil(sd)
    with pytest.raises(RuntimeError, match=msg) as e:
        target.load_state_dict(sd)
    assert "Error(s) in loading state_dict for Sequential" in str(e.value)
    after = _values(target)
    assert after.keys() == before.keys() and all(np.array_equal(after[k], before[k]) for k in before)
    assert [p._version for p in target.parameters()] == versions
    assert target[1].num_batches_tracked == 0


def test_every_problem_is_reported_at_once():
    sd = dict(_bn_model(0).state_dict())
    sd.pop("layers.0.bias")
    sd["junk"] = np.ones(1)
    sd["layers.3.bias"] = np.ones(3)
    with pytest.raises(RuntimeError) as e:
        _bn_model(1).load_state_dict(sd)
    msg = str(e.value)
    assert "'junk'" in msg and "'layers.0.bias'" in msg and "size mismatch for layers.3.bias" in msg


def test_a_non_strict_load_reports_and_skips_the_keys_that_do_not_match():
    model, _ = _trained(0)
    target = _bn_model(5)
    untouched = target[3].bias.data.copy()
    sd = dict(model.state_dict())
    sd.pop("layers.3.bias")
    sd["head.scale"] = np.ones(2)
    keys = target.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["layers.3.bias"] and keys.unexpected_keys == ["head.scale"]
    assert type(keys).__name__ == "IncompatibleKeys" and keys._fields == ("missing_keys", "unexpected_keys")
    np.testing.assert_array_equal(target[3].bias.data, untouched)
    np.testing.assert_array_equal(target[0].weight.data, model[0].weight.data)
    with pytest.raises(RuntimeError, match="size mismatch"):   # shapes still count, as in PyTorch
        target.load_state_dict({"layers.3.bias": np.ones(7)}, strict=False)


def test_load_state_dict_takes_tensors_and_refuses_a_non_mapping():
    model, target = _bn_model(0), _bn_model(1)
    target.load_state_dict({k: Tensor(v) if v.dtype.kind == "f" else v
                            for k, v in model.state_dict().items()})
    np.testing.assert_array_equal(target[0].weight.data, model[0].weight.data)
    with pytest.raises(TypeError, match="load_state_dict: expected a dict of arrays, got list"):
        target.load_state_dict([1, 2])


@needs_torch
def test_state_dict_keys_match_torch_nn_for_the_same_structure():
    # The same attribute names on both sides: minigrad's Sequential keeps its layers in .layers
    # (layers.0.weight), torch.nn.Sequential at the top (0.weight), so the two are built alike here.
    class Net(nn.Module):
        def __init__(self):
            self.fc1, self.norm, self.fc2 = nn.Linear(5, 8, rng=0), nn.BatchNorm1d(8), nn.Linear(8, 3, rng=1)

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.norm = torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8)
            self.fc2 = torch.nn.Linear(8, 3)

    ours, theirs = Net().state_dict(), TorchNet().state_dict()
    assert list(ours) == list(theirs)
    for k in ours:                      # minigrad stores W as (in, out): the transpose of PyTorch's
        want = tuple(theirs[k].shape)
        if k.endswith("weight") and theirs[k].ndim == 2:
            want = want[::-1]
        assert ours[k].shape == want, k
    count = theirs["norm.num_batches_tracked"].numpy()
    assert ours["norm.num_batches_tracked"].dtype == np.int64 == count.dtype
