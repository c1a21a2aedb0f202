"""The package's random number generator, so that randomness can be replayed.

Ops that draw random numbers (``nn.Dropout``) take an explicit
``numpy.random.Generator``; by default they share this module's generator.
Because it is one known object, ``checkpoint`` can save its state before a
forward pass and restore it before recomputing, which gives identical masks.
"""

from __future__ import annotations

import numpy as np

__all__ = ["manual_seed", "default_generator", "get_state", "set_state", "as_generator"]

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the default generator (like ``torch.manual_seed``) and return it."""
    _generator.bit_generator.state = np.random.default_rng(seed).bit_generator.state
    return _generator


def default_generator() -> np.random.Generator:
    return _generator


def get_state(generator: np.random.Generator | None = None) -> dict:
    """A copy of the generator's state (the default generator if none is given)."""
    return (generator or _generator).bit_generator.state


def set_state(state: dict, generator: np.random.Generator | None = None) -> None:
    (generator or _generator).bit_generator.state = state


def as_generator(rng: np.random.Generator | int | None, where: str = "rng") -> np.random.Generator:
    """``None`` -> the default generator; an int -> a new generator seeded with it."""
    if rng is None:
        return _generator
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"{where}: rng must be a numpy.random.Generator, an int seed or None, "
                    f"got {type(rng).__name__}")
