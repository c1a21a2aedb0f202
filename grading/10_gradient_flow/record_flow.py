"""Exercise 1: my_record_flow(model, x, loss_fn)."""
from otter.test_files import test_case

OK_FORMAT = False

name = "record_flow"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb10"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(my_record_flow):
    _checks().check_record_flow(my_record_flow)


@test_case(name="other_data", hidden=True)
def other_data(my_record_flow):
    _checks().check_record_flow(my_record_flow, seed=1010)
