"""Training with the mini autograd, beside the package's."""
from otter.test_files import test_case

OK_FORMAT = False

name = "training"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb09"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(mine_steps, pkg_steps, mine_test_acc, test_acc, mine_test_loss, test_loss, y_test):
    _checks().check_training(mine_steps, pkg_steps, mine_test_acc, test_acc, mine_test_loss, test_loss,
                             len(y_test))
