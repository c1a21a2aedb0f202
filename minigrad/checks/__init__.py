"""Exercise checks of the course's notebooks, one module per notebook (``nb03`` for notebook 03): each check raises AssertionError with a message that says what to change.

A check whose inputs are drawn at random takes a keyword ``seed`` (its default is what the notebook uses),
and some take the cases they try (``cases=``, ``shapes=``): the autograder (``grading/``) runs the same
checks again, as tests the student does not see, on inputs of its own.
"""

# The Chinese edition's set-up cell calls set_language("zh"): the messages are then shown in Chinese.
from ._language import set_language

__all__ = ["set_language"]
