"""minigrad.flow (per-layer measurements) and minigrad.viz.flow (their pictures)."""

import matplotlib
import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, nn
from minigrad.flow import layer_groups, layer_weights, record_flow, update_ratios

matplotlib.use("Agg")

X = np.random.default_rng(0).normal(size=(16, 5))
Y = np.random.default_rng(1).integers(0, 3, size=16)


def loss_fn(out):
    return out.cross_entropy_with_logits(Y)


def mlp(activation="tanh", depth=4, width=6, init="xavier", seed=0):
    return nn.MLP([5] + [width] * (depth - 1) + [3], activation=activation, init=init,
                  rng=np.random.default_rng(seed))


def test_layers_start_at_each_weight_matrix():
    model = mlp(depth=4)
    groups = layer_groups(model)
    assert [len(g) for g in groups] == [2, 2, 2, 1]  # Linear+Tanh three times, then Linear
    assert [[w.shape for w in ws] for ws in layer_weights(model)] == [[(5, 6)], [(6, 6)], [(6, 6)],
                                                                       [(6, 3)]]
    blocks = nn.Sequential(nn.Linear(5, 6), nn.Residual(nn.Sequential(nn.Linear(6, 6), nn.ReLU())),
                           nn.LayerNorm(6), nn.Linear(6, 3))
    assert [len(g) for g in layer_groups(blocks)] == [1, 2, 1]  # LayerNorm joins the block
    with pytest.raises(TypeError, match="layer_groups: expected a Sequential"):
        layer_groups(nn.Linear(2, 2))


def test_record_matches_backward_with_retain_grad_and_touches_no_grad():
    model = mlp("sigmoid", depth=5)
    rec = record_flow(model, X, loss_fn)
    assert all(p.grad is None for p in model.parameters())

    # the same thing by hand: run layer by layer, retain_grad on every layer's output
    h, outs = Tensor(X), []
    for group in layer_groups(model):
        for m in group:
            h = m(h)
        outs.append(h.retain_grad())
    loss = loss_fn(h)
    loss.backward()
    assert rec.loss == loss.item() and len(rec) == 5
    for k, (o, ws) in enumerate(zip(outs, layer_weights(model))):
        np.testing.assert_array_equal(rec.activations[k], o.data)
        np.testing.assert_array_equal(rec.activation_grads[k], o.grad)
        np.testing.assert_array_equal(rec.weight_grads[k], ws[0].grad.ravel())
        np.testing.assert_array_equal(rec.weights[k], ws[0].data.ravel())


def test_linear_layers_multiply_the_gradient_by_w_transpose():
    """With no activation, dL/dh_{l-1} = dL/dh_l @ W_l.T exactly: the chain rule's product."""
    model = mlp("identity", depth=6)
    rec = record_flow(model, X, loss_fn)
    ws = layer_weights(model)
    for k in range(1, len(rec)):
        np.testing.assert_allclose(rec.activation_grads[k - 1],
                                   rec.activation_grads[k] @ ws[k][0].data.T, rtol=1e-12, atol=1e-15)


def test_sigmoid_layers_shrink_the_gradient_by_at_most_a_quarter_of_the_spectral_norm():
    """||dL/dh_{l-1}|| = ||(dL/dh_l * s'(z_l)) W_l^T|| <= 0.25 ||W_l||_2 ||dL/dh_l||."""
    model = mlp("sigmoid", depth=8, width=12, init=lambda i, o, rng=None: rng.normal(0, 1, (i, o)))
    rec = record_flow(model, X, loss_fn)
    ws = layer_weights(model)
    for k in range(1, len(rec) - 1):  # hidden layers: Linear then Sigmoid
        shrink = np.linalg.norm(rec.activation_grads[k - 1]) / np.linalg.norm(rec.activation_grads[k])
        assert shrink <= 0.25 * np.linalg.norm(ws[k][0].data, 2) * (1 + 1e-12)


def test_summaries_and_update_ratios():
    model = mlp("relu", depth=4, init="he")
    rec = record_flow(model, X, loss_fn)
    g = rec.weight_grads
    np.testing.assert_allclose(rec.grad_mean_abs(), [np.abs(a).mean() for a in g])
    np.testing.assert_allclose(rec.grad_max_abs(), [np.abs(a).max() for a in g])
    np.testing.assert_allclose(rec.activation_rms(), [np.sqrt((a * a).mean()) for a in rec.activations])
    np.testing.assert_allclose(rec.activation_std(), [a.std() for a in rec.activations])
    assert rec.first_to_last() == pytest.approx(np.abs(g[0]).mean() / np.abs(g[-1]).mean())

    assert np.isnan(update_ratios(model, 0.1)).all()  # no .grad yet
    loss_fn(model(Tensor(X))).backward()
    ws = [w for ws in layer_weights(model) for w in ws]
    expected = [0.1 * np.linalg.norm(w.grad) / np.linalg.norm(w.data) for w in ws]
    np.testing.assert_allclose(update_ratios(model, 0.1), expected, rtol=1e-12)
    np.testing.assert_allclose(rec.update_ratios(0.1), expected, rtol=1e-12)


def test_record_flow_rejects_a_loss_that_is_not_a_scalar():
    with pytest.raises(ValueError, match="record_flow: loss_fn must return a one-element Tensor"):
        record_flow(mlp(), X, lambda out: out)


# ------------------------------------------------------------------ pictures

def test_plots_return_figures_on_log_axes_and_change_nothing():
    recs = {"tanh": record_flow(mlp("tanh"), X, loss_fn),
            "relu": record_flow(mlp("relu", init="he"), X, loss_fn)}
    copies = {k: [a.copy() for a in r.weight_grads] for k, r in recs.items()}
    fig = mg.viz.plot_grad_flow(recs)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.lines) == 4  # mean and max for each
    np.testing.assert_allclose(ax.lines[0].get_ydata(), recs["tanh"].grad_mean_abs())
    fig = mg.viz.plot_grad_flow(recs["tanh"], which="activations", show_max=False)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(),
                               [np.abs(a).mean() for a in recs["tanh"].activation_grads])
    assert mg.viz.plot_activation_scale(recs).axes[0].get_yscale() == "log"
    fig = mg.viz.plot_histograms(recs, which="weight_grads", layers=[0, -1])
    assert len(fig.axes) == 2 and fig.axes[0].get_xlabel() == "log10 |dL/dW|"
    assert len(mg.viz.plot_histograms(recs["relu"]).axes[0].patches) == 4  # one per layer
    for k, r in recs.items():
        for a, b in zip(copies[k], r.weight_grads):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="plot_grad_flow: which must be"):
        mg.viz.plot_grad_flow(recs, which="biases")
    with pytest.raises(IndexError, match="layer 9 does not exist"):
        mg.viz.plot_histograms(recs, layers=[9])
    matplotlib.pyplot.close("all")


def test_update_ratio_plot_draws_one_line_per_layer():
    r = np.abs(np.random.default_rng(0).normal(size=(7, 3))) * 1e-3
    fig = mg.viz.plot_update_ratios({"a": r, "b": r * 2})
    assert len(fig.axes) == 2
    assert len(fig.axes[0].lines) == 3 + 1  # three layers and the reference line
    np.testing.assert_allclose(fig.axes[1].lines[2].get_ydata(), r[:, 2] * 2)
    with pytest.raises(ValueError, match=r"shape \(steps, layers\)"):
        mg.viz.plot_update_ratios(np.ones(3))
    matplotlib.pyplot.close("all")
