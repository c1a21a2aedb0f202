"""Exercise 2: newton(g, x0), Newton's method on dual numbers."""
from otter.test_files import test_case

OK_FORMAT = False

name = "newton"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb04"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(newton):
    _checks().check_newton(newton)


@test_case(name="other_equations", hidden=True)
def other_equations(newton):
    import math

    cases = [("x^3 = 5", lambda x: x * x * x - 5.0, 2.0, lambda r: r ** 3 - 5.0),
             ("tanh x = 0.2", lambda x: x.tanh() - 0.2, 1.0, lambda r: math.tanh(r) - 0.2)]
    _checks().check_newton(newton, cases)
