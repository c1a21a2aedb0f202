"""Exercise: momentum_step(w, g, v, lr, momentum), SGD with momentum."""
from otter.test_files import test_case

OK_FORMAT = False

name = "momentum_step"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb09"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(momentum_step):
    _checks().check_momentum_step(momentum_step)


@test_case(name="another_network", hidden=True)
def another_network(momentum_step):
    _checks().check_momentum_step(momentum_step, seed=99)
