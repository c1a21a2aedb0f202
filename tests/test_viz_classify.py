"""minigrad.viz.classify: the pictures show what they are given and change nothing."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from minigrad.viz import plot_confusion, plot_images


def test_plot_images_makes_one_axis_per_cell_with_titles():
    imgs = np.random.default_rng(0).random((7, 8, 8))
    before = imgs.copy()
    fig = plot_images(imgs, titles=[str(i) for i in range(7)], ncols=4)
    assert len(fig.axes) == 8                       # 2 rows x 4 columns
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 7 and shown[3].get_title() == "3"
    np.testing.assert_array_equal(shown[2].images[0].get_array(), imgs[2])
    np.testing.assert_array_equal(imgs, before)
    plt.close(fig)


def test_plot_images_accepts_flat_square_images():
    fig = plot_images(np.zeros((3, 64)))
    assert fig.axes[0].images[0].get_array().shape == (8, 8)
    plt.close(fig)
    with pytest.raises(ValueError, match="length 60 are not square"):
        plot_images(np.zeros((3, 60)))
    with pytest.raises(ValueError, match="3 images but 2 titles"):
        plot_images(np.zeros((3, 4, 4)), titles=["a", "b"])


def test_plot_confusion_writes_the_counts():
    m = np.array([[5, 1], [0, 3]])
    fig = plot_confusion(m, class_names=["cat", "dog"], title="pets")
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["1", "3", "5"]   # zeros are left blank
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cat", "dog"]
    assert ax.get_title() == "pets"
    plt.close(fig)
    with pytest.raises(ValueError, match="square matrix"):
        plot_confusion(np.zeros((2, 3)))
