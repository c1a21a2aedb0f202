"""Shared test helpers: float64 everywhere, PyTorch only where it is installed."""

import pathlib

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


# An sdist holds the package and these tests, not the course around them (the
# notebooks, tools/, the Makefile...). There the modules that test those are
# left out, and the header says which; `pytest` runs the rest.
ROOT = pathlib.Path(__file__).resolve().parents[1]
_NEEDS = {"test_benchmarks.py": "benchmarks", "test_build.py": "Makefile", "test_colab.py": "tools",
          "test_e2e_tool.py": "tools", "test_grade.py": "tools", "test_i18n.py": "tools",
          "test_lab.py": "Makefile",
          "test_notebooks.py": "notebooks", "test_student.py": "tools"}
collect_ignore = [name for name, need in _NEEDS.items() if not (ROOT / need).exists()]


def pytest_configure(config):
    config.addinivalue_line("markers", "whole_course: grades every notebook end to end, too slow for "
                                       "make test (make slow, part of make e2e)")


def pytest_report_header(config):
    if collect_ignore:
        return (f"not a checkout of the course: {len(collect_ignore)} test modules of its notebooks, tools "
                f"and website left out ({', '.join(collect_ignore)})")
    return None
