"""Shared test helpers: float64 everywhere, PyTorch only where it is installed."""

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("course", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("course")

try:  # PyTorch is optional: comparisons run only where it is installed.
    import torch

    torch.set_default_dtype(torch.float64)
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (make torch)")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
