"""Q7: checkpointed_grads(x, weights, seg), backward through a chain one rebuilt segment at a time."""
from otter.test_files import test_case

OK_FORMAT = False

name = "q7"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb15"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(checkpointed_grads, calls, peak, xc, wc):
    _checks().check_checkpointed_grads(checkpointed_grads, calls, peak, xc, wc, seg=4)


@test_case(name="other_segments", hidden=True)
def other_segments(checkpointed_grads, calls, peak, xc, wc):
    _checks().check_checkpointed_grads(checkpointed_grads, calls, peak, xc, wc, seg=3)
