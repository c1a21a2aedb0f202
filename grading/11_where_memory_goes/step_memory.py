"""Exercise 1: predict_step_memory(sizes, batch, itemsize, optimizer)."""
from otter.test_files import test_case

OK_FORMAT = False

name = "step_memory"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb11"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(predict_step_memory):
    _checks().check_step_memory(predict_step_memory)


@test_case(name="another_network", hidden=True)
def another_network(predict_step_memory):
    _checks().check_step_memory(predict_step_memory, [((40, 40, 40, 3), 24)])
