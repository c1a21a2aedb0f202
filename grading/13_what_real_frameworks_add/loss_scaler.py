"""Exercise 1: LossScaler, a dynamic loss scaler."""
from otter.test_files import test_case

OK_FORMAT = False

name = "loss_scaler"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb13"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(LossScaler, float16_step_is_finite):
    _checks().check_loss_scaler(LossScaler, float16_step_is_finite)
