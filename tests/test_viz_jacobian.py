"""Jacobian heatmaps and scaling plots: what they draw, and clear errors on bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from minigrad.viz import plot_jacobian, plot_scaling  # noqa: E402


def test_heatmap_is_centred_on_zero_and_marks_blocks():
    J = np.kron(np.eye(2), np.array([[1.0, -3.0], [2.0, 0.5]]))
    before = J.copy()
    fig = plot_jacobian(J, title="kron", blocks=(2, 2))
    ax = fig.axes[0]
    (im,) = ax.get_images()
    np.testing.assert_array_equal(im.get_array(), J)
    assert im.norm.vmin == -3.0 and im.norm.vmax == 3.0 and im.norm.vcenter == 0.0
    assert len(ax.lines) == 2                  # one horizontal and one vertical block line
    assert len(ax.texts) == int((J != 0).sum())  # small matrices are annotated, zeros left blank
    assert ax.get_title() == "kron"
    np.testing.assert_array_equal(J, before)
    plt.close(fig)


def test_heatmap_of_zeros_and_bad_shapes():
    fig = plot_jacobian(np.zeros((3, 3)))
    assert fig.axes[0].get_images()[0].norm.vmax == 1.0
    plt.close(fig)
    with pytest.raises(ValueError, match=r"plot_jacobian: expected a 2-D matrix, got shape \(4,\)"):
        plot_jacobian(np.ones(4))


def test_scaling_plot_is_log_log_with_one_line_per_curve():
    n = [10, 100, 1000]
    fig = plot_scaling(n, {"J": [x * x for x in n], "VJP": n}, xlabel="C", ylabel="bytes")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [line.get_label() for line in ax.lines] == ["J", "VJP"]
    plt.close(fig)
    with pytest.raises(ValueError, match="curve 'J' has 2 values for 3 sizes"):
        plot_scaling(n, {"J": [1, 2]})
