"""Helpers the exercise checks of notebooks 08-15 share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def attempt(what: str, hint: str, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``; an error other than a missing solution (``NotImplementedError``)
    or a failed check becomes an ``AssertionError`` that says what was tried and gives the hint."""
    try:
        return f(*args, **kwargs)
    except (AssertionError, NotImplementedError):
        raise
    except Exception as err:
        raise AssertionError(f"{what} raised {type(err).__name__}: {err}\n  hint: {hint}") from err
