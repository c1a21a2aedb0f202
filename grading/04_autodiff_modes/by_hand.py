"""Exercise 1: the two-layer network's gradients by hand."""
from otter.test_files import test_case

OK_FORMAT = False

name = "by_hand"
points = 2
all_or_nothing = True


def _checks():
    """A fresh copy of the notebook's check module (a submission cannot swap its functions)."""
    import importlib

    return importlib.reload(importlib.import_module("minigrad.checks.nb04"))


@test_case(name="the_notebooks_check", hidden=False)
def the_notebooks_check(dlogits, dW2, db2, dh, dz, dW1, db1, x, y, W1, b1, W2, b2):
    _checks().check_by_hand(dict(dlogits=dlogits, dW2=dW2, db2=db2, dh=dh, dz=dz, dW1=dW1, db1=db1),
                            x, y, W1, b1, W2, b2)
