"""Exercise checks of the course's notebooks, one module per notebook (``nb03`` for notebook 03): each check raises AssertionError with a message that says what to change."""

# The Chinese edition's set-up cell calls set_language("zh"): the messages are then shown in Chinese.
from ._language import set_language

__all__ = ["set_language"]
