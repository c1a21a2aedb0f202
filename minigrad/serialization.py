"""Saving and loading without pickle: ``minigrad.save(obj, path)`` and ``minigrad.load(path)``.

``obj`` is what a trained model is kept as: ``model.state_dict()``,
``optimizer.state_dict()``, or a dict or list holding them, with NumPy arrays,
leaf Tensors, numbers, strings, booleans and None inside. The file is an
``.npz`` archive: one ``.npy`` member per array, and one more,
``structure.json`` stored as bytes, that describes everything around the arrays
(dicts with their string or integer keys, lists, tuples, numbers, and where each
array goes). Unlike ``pickle`` (and ``torch.save`` before ``weights_only``),
loading runs no code: :func:`load` reads the arrays through
``minigrad.data.load_npz`` (no object arrays, sizes checked against the
headers, an inflated-size cap) and rebuilds the structure from JSON, so a file
from someone else can at worst fail to load.

Typical use::

    minigrad.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, "digits.npz")
    ckpt = minigrad.load("digits.npz")
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .data import DEFAULT_MAX_BYTES, DataFileError, load_npz
from .tensor import Tensor

__all__ = ["save", "load"]

_STRUCTURE = "structure.json"   # the member that holds the JSON part
_FORMAT = "minigrad.save"
_VERSION = 1


def save(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` to ``path`` (an ``.npz`` archive; the name is used as given).

    The file is written to a temporary name and then renamed, so an error
    (for instance an object that cannot be saved) leaves any earlier file at
    ``path`` as it was.

    Raises:
        TypeError: something in ``obj`` is not an array, a leaf Tensor, a
            dict with str or int keys, a list, a tuple, a number, a string, a
            bool or None; the message gives where it is (``obj['state'][0]``).
    """
    arrays: dict[str, np.ndarray] = {}
    root = _encode(obj, arrays, "obj")
    text = json.dumps({"format": _FORMAT, "version": _VERSION, "root": root}, allow_nan=True)
    members = {_STRUCTURE: np.frombuffer(text.encode("utf-8"), dtype=np.uint8)}
    members.update(arrays)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **members)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Read back what :func:`save` wrote, without pickle.

    Arrays come back as writable NumPy arrays, Tensors as leaf Tensors (their
    data, ``requires_grad`` and ``name``), the rest as it was saved.
    ``max_bytes`` caps the archive's inflated size (see ``load_npz``).

    Raises:
        FileNotFoundError: no file at ``path``.
        DataFileError: not a file written by :func:`save`, or corrupt; the
            message says what is wrong.
    """
    arrays = load_npz(path, max_bytes=max_bytes)
    raw = arrays.pop(_STRUCTURE, None)
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise DataFileError(f"load: {path} has no {_STRUCTURE} member; it was not written by "
                            f"minigrad.save (use minigrad.data.load_npz for plain arrays)")
    try:
        head = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataFileError(f"load: the {_STRUCTURE} of {path} is not valid JSON ({e})") from None
    if not isinstance(head, dict) or head.get("format") != _FORMAT or "root" not in head:
        raise DataFileError(f"load: {path} is not a minigrad.save file (its {_STRUCTURE} has no "
                            f"format {_FORMAT!r})")
    if head.get("version") != _VERSION:
        raise DataFileError(f"load: {path} is format version {head.get('version')!r}; this "
                            f"minigrad reads version {_VERSION}")
    used: set[str] = set()
    obj = _decode(head["root"], arrays, used, path, "obj")
    if used != set(arrays):
        extra = sorted(set(arrays) - used)
        raise DataFileError(f"load: {path} holds arrays {extra[:5]} that its {_STRUCTURE} does not "
                            f"mention; the file is corrupt")
    return obj


# ------------------------------------------------------------- the JSON part
# JSON has numbers, strings, booleans, null and lists natively; everything else
# is an object with one tag: {"dict": [[key, value], ...]}, {"tuple": [...]},
# {"array": member}, {"tensor": member, "requires_grad": b, "name": s},
# {"scalar": member} (a NumPy scalar, kept with its dtype).

def _encode(obj: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)) and not isinstance(obj, np.generic):
        return obj
    if isinstance(obj, Tensor):
        if obj.grad_fn is not None:
            raise TypeError(f"save: {where} is a Tensor computed by '{obj.op}'; save a leaf "
                            f"(t.detach()) or the model's state_dict()")
        return {"tensor": _add_array(obj.data, arrays, where), "requires_grad": obj.requires_grad,
                "name": obj.name}
    if isinstance(obj, np.ndarray):
        return {"array": _add_array(obj, arrays, where)}
    if isinstance(obj, np.generic):
        return {"scalar": _add_array(np.asarray(obj), arrays, where)}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (str, int, np.integer)):
                raise TypeError(f"save: {where} has a key {k!r} of type {type(k).__name__}; "
                                f"keys must be str or int")
            k = k if isinstance(k, str) else int(k)
            items.append([k, _encode(v, arrays, f"{where}[{k!r}]")])
        return {"dict": items}
    if isinstance(obj, list):
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"tuple": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(f"save: {where} is a {type(obj).__name__}, which minigrad.save does not "
                    f"write (it writes arrays, leaf Tensors, dicts, lists, tuples, numbers, "
                    f"strings, booleans and None; for a model, save model.state_dict())")


def _add_array(a: np.ndarray, arrays: dict[str, np.ndarray], where: str) -> str:
    if a.dtype.kind not in "biuf":
        raise TypeError(f"save: {where} is an array of dtype {a.dtype}; only numeric and boolean "
                        f"arrays are written (no object, string or structured arrays)")
    key = f"a{len(arrays)}"
    arrays[key] = a
    return key


def _decode(node: Any, arrays: dict[str, np.ndarray], used: set[str], path, where: str) -> Any:
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [_decode(v, arrays, used, path, f"{where}[{i}]") for i, v in enumerate(node)]
    bad = DataFileError(f"load: {path}: the entry at {where} is malformed ({str(node)[:80]}); the "
                        f"file is corrupt or was not written by minigrad.save")
    if not isinstance(node, dict) or not node:
        raise bad
    tag = next(iter(node))
    if tag == "dict" and len(node) == 1 and isinstance(node["dict"], list):
        out = {}
        for item in node["dict"]:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int))
                    and not isinstance(item[0], bool)):
                raise bad
            out[item[0]] = _decode(item[1], arrays, used, path, f"{where}[{item[0]!r}]")
        return out
    if tag == "tuple" and len(node) == 1 and isinstance(node["tuple"], list):
        return tuple(_decode(v, arrays, used, path, f"{where}[{i}]") for i, v in enumerate(node["tuple"]))
    if tag in ("array", "scalar") and len(node) == 1:
        a = _take(node[tag], arrays, used, path, where)
        return a if tag == "array" else a[()]
    if tag == "tensor" and set(node) == {"tensor", "requires_grad", "name"} \
            and isinstance(node["requires_grad"], bool) and isinstance(node["name"], (str, type(None))):
        a = _take(node["tensor"], arrays, used, path, where)
        if a.dtype.kind != "f":
            raise DataFileError(f"load: {path}: the Tensor at {where} has dtype {a.dtype}; a "
                                f"Tensor holds floating-point numbers")
        return Tensor(a, requires_grad=node["requires_grad"], dtype=a.dtype, name=node["name"])
    raise bad


def _take(key: Any, arrays: dict[str, np.ndarray], used: set[str], path, where: str) -> np.ndarray:
    if not isinstance(key, str) or key not in arrays:
        raise DataFileError(f"load: {path}: the entry at {where} names an array {key!r} that the "
                            f"file does not hold; the file is corrupt")
    if key in used:
        raise DataFileError(f"load: {path}: the array {key!r} is named twice (at {where}); the "
                            f"file is corrupt")
    used.add(key)
    return arrays[key]
