"""Data for the course: a small real dataset, a stratified split, and mini-batches.

The dataset is the UCI optical handwritten digits (Alpaydin & Kaynak, 1998;
CC BY 4.0): 1,797 grey images of 8x8 pixels, each pixel a count from 0 to 16,
labelled 0-9. It ships with the package as ``minigrad/datasets/digits.npz``
(see ``minigrad/datasets/README.md`` for where it comes from).

Loading is careful in two ways:

* the file's SHA-256 must equal ``DIGITS_SHA256``, so a truncated or edited
  file is refused instead of silently training on wrong numbers;
* arrays are read without pickle (as ``np.load(..., allow_pickle=False)``
  would): an ``.npz`` can hold pickled Python objects, and unpickling runs
  code, so any object array is refused; every member is checked to be a
  well-formed ``.npy`` array whose size matches its header (:func:`load_npz`).
"""

from __future__ import annotations

import hashlib
import math
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import random as _random

__all__ = ["DIGITS_PATH", "DIGITS_SHA256", "DEFAULT_MAX_BYTES", "DataFileError", "sha256_of", "load_npz",
           "load_digits", "train_test_split", "batches"]

DIGITS_PATH = Path(__file__).resolve().parent / "datasets" / "digits.npz"
DIGITS_SHA256 = "aa64e930663d6e9271e1566601d65e70236553f73ec6cb041a4ab37167cf1d04"
_RESTORE = ("Restore the file that ships with minigrad: `git checkout -- minigrad/datasets/digits.npz` "
            "in a clone of the repository, or reinstall the package (`pip install -e .`).")


class DataFileError(ValueError):
    """A data file is corrupt, has unexpected contents, or would need pickle to load."""


def sha256_of(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


DEFAULT_MAX_BYTES = 1 << 26  # 64 MiB: what load_npz inflates at most, unless told more
_READ_BLOCK = 1 << 20        # bytes read from a member at a time


def _check_sha256(sha256, where: str) -> str:
    """The checksum in lower case without surrounding whitespace, or a clear error."""
    if not isinstance(sha256, str):
        raise TypeError(f"{where}: sha256 must be a string of 64 hexadecimal digits, got "
                        f"{type(sha256).__name__}")
    digest = sha256.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"{where}: {sha256!r} is not a SHA-256 checksum: expected 64 hexadecimal "
                         f"digits, got {len(digest)} characters"
                         + ("" if len(digest) != 64 else " with some that are not hexadecimal")
                         + ". The checksum is malformed, not the file")
    return digest


def load_npz(path: str | Path, sha256: str | None = None,
             max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read strictly and without pickle.

    Strict even without a checksum: every member of the zip archive must be a
    well-formed ``.npy`` array (the magic string, a header that
    ``np.lib.format.read_array_header_*`` parses, a dtype without Python objects),
    and the bytes the header announces must be exactly the bytes the member
    holds. That is checked against the member's size in the zip directory before
    anything is allocated, so a small file whose header claims 10^12 numbers is
    refused instead of exhausting memory. The members' inflated sizes, added up
    from the zip directory, may not exceed ``max_bytes`` (64 MiB by default): a
    compressed file of a quarter megabyte that would inflate to 256 MB (a "zip
    bomb") is refused before anything is inflated. Each array is read straight
    into its own memory, a megabyte at a time, so reading needs no second copy.
    Nothing is ever unpickled.

    Args:
        path: the file.
        sha256: if given, the file's SHA-256 must equal it (checked before
            reading); upper case and surrounding whitespace (a trailing
            newline) are ignored.
        max_bytes: the cap on the inflated size of all members together.

    Raises:
        FileNotFoundError: the file does not exist.
        TypeError, ValueError: ``sha256`` is not 64 hexadecimal digits, or
            ``max_bytes`` is not a positive integer (the arguments, not the file).
        DataFileError: wrong checksum, not a zip archive, members too large
            together, a member that is not a well-formed ``.npy`` array, sizes
            that do not match, a truncated or corrupt member, or an object
            array; the message says which.
    """
    path = Path(path)
    digest = None if sha256 is None else _check_sha256(sha256, "load_npz")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 1:
        raise ValueError(f"load_npz: max_bytes must be a positive integer, got {max_bytes!r}")
    if not path.is_file():
        raise FileNotFoundError(f"load_npz: no file at {path}")
    if digest is not None:
        actual = sha256_of(path)
        if actual != digest:
            raise DataFileError(f"load_npz: {path} has SHA-256 {actual}, expected {digest}; "
                                f"the file is corrupt or has been changed")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            total = 0
            for info in infos:  # the directory's sizes, before anything is inflated
                total += info.file_size
                if total > max_bytes:
                    raise DataFileError(
                        f"load_npz: {path} would inflate to more than max_bytes={max_bytes:,} bytes: "
                        f"member {info.filename!r} holds {info.file_size:,} bytes "
                        f"({info.compress_size:,} compressed), {total:,} bytes with the members "
                        f"before it. If the file is trusted, pass a larger max_bytes")
            for info in infos:
                name = info.filename
                if not name.endswith(".npy"):
                    raise DataFileError(f"load_npz: member {name!r} of {path} is not an .npy array "
                                        f"(an .npz holds only .npy members)")
                key = name[:-len(".npy")]
                if key in arrays:
                    raise DataFileError(f"load_npz: member {name!r} appears twice in {path}")
                arrays[key] = _read_npy_member(zf, info, path)
    except DataFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError,
            NotImplementedError, RuntimeError) as e:  # RuntimeError: an encrypted member
        raise DataFileError(f"load_npz: {path} is not a readable .npz file ({e})") from e
    return arrays


def _read_npy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> np.ndarray:
    """One ``.npy`` member, its header checked against its stored size before reading the data."""
    fmt = np.lib.format
    where = f"load_npz: member {info.filename!r} of {path}"
    with zf.open(info) as f:
        try:
            version = fmt.read_magic(f)
        except ValueError as e:
            raise DataFileError(f"{where} has no .npy header ({e})") from None
        readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
        if version not in readers:
            raise DataFileError(f"{where} is .npy format version {version[0]}.{version[1]}; "
                                f"only 1.0 and 2.0 are read")
        try:
            shape, fortran, dtype = readers[version](f)
        except ValueError as e:
            raise DataFileError(f"{where} has a malformed .npy header ({e})") from None
        if dtype.hasobject:
            raise DataFileError(f"{where}: array {info.filename[:-4]!r} holds Python objects, which "
                                f"only pickle can load; minigrad never unpickles data "
                                f"(allow_pickle=False)")
        if any(n < 0 for n in shape):
            raise DataFileError(f"{where} has a negative size in its shape {shape}")
        count = math.prod(shape)
        expected = count * dtype.itemsize
        stored = info.file_size - f.tell()
        if expected != stored:
            raise DataFileError(f"{where}: its header announces shape {shape} of {dtype} "
                                f"({expected:,} bytes) but the member holds {stored:,} bytes after "
                                f"the header; the file is truncated or corrupt")
        arr = np.empty(count, dtype=dtype)
        got = 0
        if expected:
            raw = arr.view(np.uint8)  # the array's own bytes: each block is copied in once
            while got < expected:
                block = f.read(min(_READ_BLOCK, expected - got))
                if not block:
                    break
                raw[got:got + len(block)] = np.frombuffer(block, dtype=np.uint8)
                got += len(block)
        longer = f.read(1)  # one more byte would show a member longer than announced
    if got != expected or longer:
        raise DataFileError(f"{where} is truncated: {got:,} of {expected:,} data bytes"
                            if got != expected else f"{where} holds more data than its header announces")
    return arr.reshape(shape, order="F" if fortran else "C")


def load_digits(raw: bool = False, flatten: bool = False,
                path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 UCI handwritten digits: ``(images, labels)``.

    Args:
        raw: return the stored pixel counts (uint8, 0..16) instead of
            float64 values scaled to [0, 1] (count / 16).
        flatten: images of shape (1797, 64) instead of (1797, 8, 8).
        path: read this copy instead of the one in the package (it must have
            the same checksum).

    Returns:
        images, and labels as int64 class ids 0..9 of shape (1797,).
    """
    path = DIGITS_PATH if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load_digits: the digits file is missing (looked for {path}). "
                                f"{_RESTORE}")
    try:
        arrays = load_npz(path, sha256=DIGITS_SHA256)
    except DataFileError as e:
        raise DataFileError(f"load_digits: {path} is not the digits file that ships with minigrad "
                            f"(expected SHA-256 {DIGITS_SHA256}). {_RESTORE}\nDetail: {e}") from e
    images, labels = arrays["images"], arrays["labels"]
    # The checksum already vouches for these; they document what the file holds.
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.uint8
    x = images if raw else images.astype(np.float64) / 16.0
    if flatten:
        x = x.reshape(len(x), 64)
    return x, labels.astype(np.int64)


def train_test_split(x: np.ndarray, y: np.ndarray, test_fraction: float = 0.2,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A stratified, seeded split: ``x_train, x_test, y_train, y_test``.

    Each class c with n_c examples sends ``round(test_fraction * n_c)`` of them
    (at least one, and never all) to the test split, chosen at random with
    ``np.random.default_rng(seed)``; so every class keeps its share in both
    splits, and the same seed always gives the same split. Examples keep their
    original order within each split.
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(x) != len(y):
        raise ValueError(f"train_test_split: x has {len(x)} examples but y has {len(y)}")
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise ValueError(f"train_test_split: y must be a 1-D array of integer class ids, "
                         f"got dtype {y.dtype} and shape {y.shape}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"train_test_split: test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if len(idx) < 2:
            raise ValueError(f"train_test_split: class {c} has {len(idx)} example; a stratified "
                             f"split needs at least 2 per class")
        k = min(max(int(round(test_fraction * len(idx))), 1), len(idx) - 1)
        test[rng.permutation(idx)[:k]] = True
    return x[~test], x[test], y[~test], y[test]


def batches(x: np.ndarray, y: np.ndarray, batch_size: int,
            rng: np.random.Generator | int | None = None, shuffle: bool = True,
            drop_last: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Mini-batches ``(x[idx], y[idx])`` covering the data once (one epoch).

    With ``shuffle`` the order is a fresh permutation drawn from ``rng`` (a
    Generator, a seed, or None for ``minigrad.random``'s default generator);
    each call draws a new one. The last batch is smaller unless ``drop_last``.
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(x) != len(y):
        raise ValueError(f"batches: x has {len(x)} examples but y has {len(y)}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batches: batch_size must be a positive integer, got {batch_size!r}")
    if shuffle:
        gen = _random.as_generator(rng, "batches")
        order = gen.permutation(len(x))
    else:
        order = np.arange(len(x))
    stop = len(x) - len(x) % batch_size if drop_last else len(x)

    def epoch():
        for start in range(0, stop, batch_size):
            idx = order[start:start + batch_size]
            yield x[idx], y[idx]

    return epoch()
