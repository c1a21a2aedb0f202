"""Checks of notebook 05's exercise (matmul as an op of the engine, ``MyMatMul``).

``check_matmul(MyMatMul)`` checks, in this order:

1. for A of shape (4, 3) and (2, 4, 3) and B of shape (3, 5): the forward
   result is ``A @ B``; the gradients through ``minigrad.grad`` equal the
   package's matmul (dA = g @ B.T; dB adds A.T @ g over all K*N rows), and
   ``gradcheck`` agrees with central differences;
2. for ``x @ W`` (only W needs a gradient), ``V @ c`` (only V) and ``V @ W``
   (both), with a 2-D and a 3-D left operand: the node keeps exactly the
   input arrays its VJP reads (``B`` only if A needs a gradient, ``A`` only if
   B does), themselves and not copies, and nothing else;
3. ``backward`` called directly returns two gradients, ``None`` for an input
   that needs none, and leaves ``g`` as it was, its values and its shape
   (a 3-D ``g`` shows a ``g.shape = (-1, M)`` written in place).
"""

from __future__ import annotations

import numpy as np

from ..engine import grad
from ..tensor import Tensor
from ._op_checks import agrees_with_central_differences, attempt, backward_leaves_g_alone

__all__ = ["check_matmul"]

SHAPE_HINT = ("write the shapes down (section 2): g is (..., N, M), A is (..., N, D) and B is (D, M); "
              "backward(ctx, g) returns (dA, dB), dA of A's shape and dB of B's shape (D, M); for a 3-D A, "
              "A.T @ g does not give (D, M): reshape A to (K*N, D) and g to (K*N, M) first")


def check_matmul(MyMatMul, *, seed: int = 51) -> None:
    """Raise AssertionError, saying what to change, unless MyMatMul meets the exercise's four requirements."""
    r = np.random.default_rng(seed)
    for label, shape_a in (("A of shape (4, 3)", (4, 3)), ("A of shape (2, 4, 3)", (2, 4, 3))):
        a_np, b_np, g_np = r.normal(size=shape_a), r.normal(size=(3, 5)), r.normal(size=shape_a[:-1] + (5,))
        a_t, b_t = Tensor(a_np, requires_grad=True), Tensor(b_np, requires_grad=True)
        c = attempt(f"MyMatMul.apply with {label}", "forward(ctx, a, b) receives two arrays and returns a @ b",
                    MyMatMul.apply, a_t, b_t)
        assert c.shape == shape_a[:-1] + (5,) and np.allclose(c.data, a_np @ b_np), \
            f"{label}: forward must return a @ b, of shape {shape_a[:-1] + (5,)}; got shape {c.shape}"
        mine = attempt(f"the backward pass through MyMatMul with {label}", SHAPE_HINT,
                       grad, c, [a_t, b_t], grad_output=g_np)
        a_p, b_p = Tensor(a_np, requires_grad=True), Tensor(b_np, requires_grad=True)
        pkg = grad(a_p @ b_p, [a_p, b_p], grad_output=g_np)
        assert np.allclose(mine[0].data, pkg[0].data), f"{label}: dA differs from the package's matmul: dA = g @ B.T"
        assert np.allclose(mine[1].data, pkg[1].data), \
            f"{label}: dB differs from the package's matmul: dB adds up A.T @ g over every row of A " \
            f"(all K*N tokens when A is 3-D; a mean, or the first sequence only, is not enough)"
        agrees_with_central_differences(f"{label}: ", MyMatMul.apply, Tensor(a_np, requires_grad=True),
                                        Tensor(b_np, requires_grad=True))

    for lead in ((4,), (2, 4)):
        x = Tensor(r.normal(size=lead + (3,)))                  # data: needs no gradient
        W = Tensor(r.normal(size=(3, 5)), requires_grad=True)
        V = Tensor(r.normal(size=lead + (3,)), requires_grad=True)
        c = Tensor(r.normal(size=(3, 5)))
        dims = f"{len(lead) + 1}-D"
        for A_t, B_t, want, case in ((x, W, "A", f"x @ W ({dims} x) with only W needing a gradient"),
                                     (V, c, "B", f"V @ c ({dims} V) with only V needing a gradient"),
                                     (V, W, "AB", f"V @ W ({dims} V) with both needing a gradient")):
            node = attempt(f"MyMatMul.apply for {case}", "forward(ctx, a, b) receives two arrays and returns a @ b",
                           MyMatMul.apply, A_t, B_t).grad_fn
            for name, t in (("A", A_t), ("B", B_t)):
                kept = any(np.shares_memory(v, t.data) for v in node.arrays())
                if name in want:
                    assert kept, (f"{case}: your node does not keep {name} (or keeps a copy of it); the VJP reads "
                                  f"it, so save the input array itself")
                else:
                    assert not kept, (f"{case}: your node keeps {name}, which the backward pass never reads here; "
                                      f"save {name} only if ctx.needs_input_grad says the other input needs a "
                                      f"gradient")
            expect = sum(t.data.nbytes for name, t in (("A", A_t), ("B", B_t)) if name in want)
            assert node.saved_nbytes() == expect, \
                f"{case}: your node keeps {node.saved_nbytes()} bytes, but {' and '.join(want)} take {expect}: " \
                f"keep nothing else, and no copies"
            g = r.normal(size=lead + (5,))
            grads = backward_leaves_g_alone(f"your backward for {case}", MyMatMul.backward, node, g,
                                            "check ctx.needs_input_grad before using a saved value that may be None")
            assert isinstance(grads, (tuple, list)) and len(grads) == 2, \
                f"{case}: backward must return one gradient per input, two in all: (dA, dB)"
            for name, need, gr in zip("AB", node.needs_input_grad, grads):
                if not need:
                    assert gr is None, (f"{case}: backward returned a gradient for {name}, which needs none; "
                                        f"return None for it (ctx.needs_input_grad) instead of a matmul that "
                                        f"nothing reads")
