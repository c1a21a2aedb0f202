"""minigrad.data: the shipped digits file, its integrity checks, the split, the batches."""

import pickle
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad import data
from minigrad.data import DataFileError, batches, load_digits, load_npz, train_test_split

# ------------------------------------------------------------------ loading

def test_shipped_file_matches_the_recorded_checksum():
    assert data.DIGITS_PATH.is_file()
    assert data.sha256_of(data.DIGITS_PATH) == data.DIGITS_SHA256


def test_digits_shapes_dtypes_and_ranges():
    x, y = load_digits()
    assert x.shape == (1797, 8, 8) and x.dtype == np.float64
    assert x.min() == 0.0 and x.max() == 1.0
    assert y.shape == (1797,) and y.dtype == np.int64
    raw, y_raw = load_digits(raw=True)
    assert raw.dtype == np.uint8 and raw.min() == 0 and raw.max() == 16
    np.testing.assert_array_equal(raw / 16.0, x)
    np.testing.assert_array_equal(y_raw, y)
    flat, _ = load_digits(flatten=True)
    assert flat.shape == (1797, 64)
    np.testing.assert_array_equal(flat[5], x[5].ravel())  # row by row


def test_digits_class_counts():
    # The counts published with the UCI test part (optdigits.tes).
    _, y = load_digits()
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_digits_pixels_look_like_digits():
    # A zero has ink around a hole: the centre of the mean "0" is lighter than its ring.
    x, y = load_digits()
    zero = x[y == 0].mean(axis=0)
    assert zero[3:5, 3:5].mean() < 0.5 * zero[1:7, 1:7].max()
    # The outer columns are almost always blank at this resolution.
    assert x[:, :, 0].mean() < 0.05


def test_a_corrupted_copy_is_refused_with_a_clear_error(tmp_path):
    bad = tmp_path / "digits.npz"
    shutil.copy(data.DIGITS_PATH, bad)
    raw = bytearray(bad.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad.write_bytes(bytes(raw))
    with pytest.raises(DataFileError) as e:
        load_digits(path=bad)
    msg = str(e.value)
    assert "load_digits" in msg and data.DIGITS_SHA256 in msg
    assert "git checkout -- minigrad/datasets/digits.npz" in msg


def test_a_truncated_copy_is_refused(tmp_path):
    bad = tmp_path / "digits.npz"
    bad.write_bytes(data.DIGITS_PATH.read_bytes()[:1000])
    with pytest.raises(DataFileError, match="expected SHA-256"):
        load_digits(path=bad)
    with pytest.raises(DataFileError, match="not a readable .npz"):
        load_npz(bad)  # without a checksum, reading itself fails clearly


def test_a_missing_file_says_how_to_restore_it(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        load_digits(path=tmp_path / "nowhere.npz")
    msg = str(e.value)
    assert "missing" in msg and "nowhere.npz" in msg and "git checkout" in msg


def test_load_npz_checks_the_checksum_before_reading(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, a=np.arange(3))
    assert load_npz(path, sha256=data.sha256_of(path))["a"].tolist() == [0, 1, 2]
    with pytest.raises(DataFileError, match="expected 0000"):
        load_npz(path, sha256="0" * 64)


_UNPICKLED = []


def _record(tag):
    _UNPICKLED.append(tag)
    return tag


class _Payload:
    """Unpickling this calls _record: a stand-in for code an attacker would run."""

    def __reduce__(self):
        return (_record, ("unpickled",))


def test_an_object_array_is_refused_and_never_unpickled(tmp_path):
    path = tmp_path / "evil.npz"
    arr = np.empty(1, dtype=object)
    arr[0] = _Payload()
    np.savez(path, images=arr)
    assert pickle.loads(pickle.dumps(_Payload())) == "unpickled"  # the payload is live
    _UNPICKLED.clear()
    with pytest.raises(DataFileError, match="pickle") as e:
        load_npz(path)
    assert "'images'" in str(e.value)
    assert _UNPICKLED == []


# -------------------------------------------------------------------- split

def test_split_is_stratified_disjoint_and_complete():
    _, y = load_digits()
    idx = np.arange(len(y))
    i_tr, i_te, y_tr, y_te = train_test_split(idx, y, test_fraction=0.2, seed=0)
    assert sorted(np.concatenate([i_tr, i_te]).tolist()) == idx.tolist()
    np.testing.assert_array_equal(y[i_tr], y_tr)
    np.testing.assert_array_equal(y[i_te], y_te)
    counts = np.bincount(y)
    assert np.bincount(y_te, minlength=10).tolist() == [int(round(0.2 * c)) for c in counts]
    assert np.all(np.diff(i_tr) > 0) and np.all(np.diff(i_te) > 0)  # original order kept


def test_split_is_deterministic_and_depends_on_the_seed():
    x, y = load_digits(flatten=True)
    a = train_test_split(x, y, 0.25, seed=3)
    b = train_test_split(x, y, 0.25, seed=3)
    c = train_test_split(x, y, 0.25, seed=4)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[1], c[1])


@given(st.lists(st.integers(0, 4), min_size=2, max_size=60), st.floats(0.05, 0.95))
def test_split_keeps_every_class_in_both_parts(labels, frac):
    y = np.array(labels)
    counts = np.bincount(y)
    if (counts[counts > 0] < 2).any():
        with pytest.raises(ValueError, match="at least 2 per class"):
            train_test_split(np.arange(len(y)), y, frac, seed=0)
        return
    _, _, y_tr, y_te = train_test_split(np.arange(len(y)), y, frac, seed=0)
    assert set(y_tr.tolist()) == set(y_te.tolist()) == set(labels)
    assert len(y_tr) + len(y_te) == len(y)


@pytest.mark.parametrize("args, msg", [
    ((np.zeros((3, 2)), np.array([0, 1])), "x has 3 examples but y has 2"),
    ((np.zeros((4, 2)), np.array([0.0, 1.0, 0.0, 1.0])), "integer class ids"),
    ((np.zeros((4, 2)), np.array([0, 1, 0, 1]), 0.0), r"test_fraction must be in \(0, 1\)"),
    ((np.zeros((4, 2)), np.array([0, 1, 0, 1]), 1.0), r"test_fraction must be in \(0, 1\)"),
])
def test_split_errors(args, msg):
    with pytest.raises(ValueError, match=msg):
        train_test_split(*args)


# ------------------------------------------------------------------ batches

def test_batches_cover_the_data_once_in_a_seeded_order():
    x = np.arange(10)[:, None] * np.ones((1, 3))
    y = np.arange(10)
    got = list(batches(x, y, 4, rng=np.random.default_rng(0)))
    assert [len(b) for _, b in got] == [4, 4, 2]
    seen = np.concatenate([b for _, b in got])
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))
    for xb, yb in got:
        np.testing.assert_array_equal(xb[:, 0], yb)  # x and y stay paired
    again = list(batches(x, y, 4, rng=np.random.default_rng(0)))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(got, again))


def test_batches_draw_a_new_order_each_epoch_and_can_keep_order():
    x, y = np.zeros((12, 1)), np.arange(12)
    gen = np.random.default_rng(1)
    e1 = np.concatenate([b for _, b in batches(x, y, 5, gen)])
    e2 = np.concatenate([b for _, b in batches(x, y, 5, gen)])
    assert not np.array_equal(e1, e2)
    plain = [b.tolist() for _, b in batches(x, y, 5, shuffle=False)]
    assert plain == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    dropped = [len(b) for _, b in batches(x, y, 5, rng=0, drop_last=True)]
    assert dropped == [5, 5]


def test_batches_from_the_default_generator_replay_after_manual_seed():
    import minigrad

    x, y = np.zeros((9, 1)), np.arange(9)
    minigrad.random.manual_seed(7)
    a = [b.tolist() for _, b in batches(x, y, 4)]
    minigrad.random.manual_seed(7)
    b = [b.tolist() for _, b in batches(x, y, 4)]
    assert a == b


@pytest.mark.parametrize("kwargs, err, msg", [
    (dict(batch_size=0), ValueError, "batch_size must be a positive integer"),
    (dict(batch_size=2.5), ValueError, "batch_size must be a positive integer"),
    (dict(batch_size=2, rng="seed"), TypeError, "batches: rng must be"),
])
def test_batches_errors_are_raised_at_the_call(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        batches(np.zeros((4, 1)), np.arange(4), **kwargs)  # no iteration needed
    with pytest.raises(ValueError, match="x has 4 examples but y has 3"):
        batches(np.zeros((4, 1)), np.arange(3), 2)


def test_the_data_file_is_declared_as_package_data():
    import fnmatch

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    root = data.DIGITS_PATH.parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["minigrad"]
    rel = data.DIGITS_PATH.relative_to(root / "minigrad").as_posix()
    assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), f"{rel} would not ship"


# ------------------------------------------------------- a strict load_npz

def _npy_bytes(arr):
    import io

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _zip(path, members, compression=None):
    import zipfile

    with zipfile.ZipFile(path, "w", compression=compression or zipfile.ZIP_STORED) as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    return path


def _header(shape, dtype="<f8"):
    """A version 1.0 .npy header announcing ``shape`` of ``dtype``."""
    d = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode("latin1")
    d += b" " * (-(10 + len(d) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d


def test_well_formed_members_round_trip(tmp_path):
    """A guard for the strict reader: every layout np.savez writes still loads exactly."""
    import zipfile

    arrays = {"a": np.arange(6.0).reshape(2, 3), "f": np.asfortranarray(np.arange(6).reshape(3, 2)),
              "s": np.array(3.5), "b": np.array([True, False]), "e": np.zeros((0, 4))}
    for name, saver in (("plain.npz", np.savez), ("small.npz", np.savez_compressed)):
        np.savez(tmp_path / name, **arrays) if saver is np.savez else saver(tmp_path / name, **arrays)
        got = load_npz(tmp_path / name)
        assert sorted(got) == sorted(arrays)
        for k, v in arrays.items():
            np.testing.assert_array_equal(got[k], v)
            assert got[k].dtype == v.dtype and got[k].shape == v.shape
    assert zipfile.is_zipfile(tmp_path / "small.npz")


def test_a_header_claiming_far_more_than_the_file_holds_is_refused_before_allocating(tmp_path):
    bomb = _zip(tmp_path / "bomb.npz", {"x.npy": _header((10 ** 12,)) + b"\0" * 800})
    assert bomb.stat().st_size < 2048
    with pytest.raises(DataFileError, match=r"member 'x.npy' .* announces shape \(1000000000000,\) of "
                                            r"float64 \(8,000,000,000,000 bytes\) but the member holds "
                                            r"800 bytes"):
        load_npz(bomb)


def test_a_truncated_member_is_refused(tmp_path):
    raw = _npy_bytes(np.arange(100.0))
    path = _zip(tmp_path / "short.npz", {"x.npy": raw[:-8]})
    with pytest.raises(DataFileError, match=r"member 'x.npy' .* announces shape \(100,\) of float64 "
                                            r"\(800 bytes\) but the member holds 792 bytes"):
        load_npz(path)
    longer = _zip(tmp_path / "long.npz", {"x.npy": raw + b"\0"})
    with pytest.raises(DataFileError, match=r"holds 801 bytes"):
        load_npz(longer)


def test_a_member_without_an_npy_header_is_refused(tmp_path):
    path = _zip(tmp_path / "text.npz", {"x.npy": b"just some text, not an array\n"})
    with pytest.raises(DataFileError, match=r"member 'x.npy' .* has no .npy header"):
        load_npz(path)
    bad = _zip(tmp_path / "hdr.npz", {"x.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': 1}   \n"})
    with pytest.raises(DataFileError, match=r"member 'x.npy' .* has a malformed .npy header"):
        load_npz(bad)


def test_a_member_that_is_not_npy_is_refused(tmp_path):
    path = _zip(tmp_path / "extra.npz", {"a.npy": _npy_bytes(np.ones(2)), "README.txt": b"hello"})
    with pytest.raises(DataFileError, match=r"member 'README.txt' .* is not an .npy array"):
        load_npz(path)


@pytest.mark.parametrize("content", [b"a,b\n1,2\n", "npy"], ids=["text", "a plain .npy"])
def test_a_file_that_is_not_a_zip_archive_is_refused(tmp_path, content):
    path = tmp_path / "data.npz"
    path.write_bytes(_npy_bytes(np.ones(3)) if content == "npy" else content)
    with pytest.raises(DataFileError, match=r"is not a readable .npz file"):
        load_npz(path)


def test_a_corrupt_compressed_member_is_refused(tmp_path):
    """A guard for the strict reader: zlib and CRC errors still become DataFileError."""
    import zipfile

    path = _zip(tmp_path / "c.npz", {"x.npy": _npy_bytes(np.arange(1000.0))}, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    raw[200] ^= 0xFF                             # inside the compressed data
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFileError):
        load_npz(path)


# ------------------------------------------------ zip bombs and checksums

def _bomb(path, nbytes, name="x.npy"):
    """A deflated .npy member of nbytes zeros: a few kilobytes on disk per megabyte inflated."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open(name, "w", force_zip64=True) as f:
            f.write(_header((nbytes // 8,)))
            block = bytes(1 << 20)
            for start in range(0, nbytes, len(block)):
                f.write(block[:nbytes - start])
    return path


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    bomb = _bomb(tmp_path / "bomb.npz", 16 << 20)
    assert bomb.stat().st_size < 64 << 10               # 16 MiB of zeros in under 64 KiB
    with pytest.raises(DataFileError, match=r"bomb.npz would inflate to more than max_bytes=8,388,608 "
                                            r"bytes: member 'x.npy' holds 16,777,344 bytes \([\d,]+ "
                                            r"compressed\).*pass a larger max_bytes"):
        load_npz(bomb, max_bytes=8 << 20)
    assert data.DEFAULT_MAX_BYTES == 64 << 20           # the default refuses a 256 MB bomb too
    assert load_npz(bomb, max_bytes=32 << 20)["x"].shape == (2 << 20,)   # a raised cap reads it


def test_the_cap_counts_all_members_together(tmp_path):
    two = {"a.npy": _npy_bytes(np.zeros(1000)), "b.npy": _npy_bytes(np.zeros(1000))}
    path = _zip(tmp_path / "two.npz", two)
    assert sorted(load_npz(path, max_bytes=2 * 8128 + 256)) == ["a", "b"]
    with pytest.raises(DataFileError, match=r"member 'b.npy' holds 8,128 bytes .* 16,256 bytes with "
                                            r"the members before it"):
        load_npz(path, max_bytes=12000)


def test_reading_makes_no_second_copy_of_an_array(tmp_path):
    import tracemalloc

    path = _bomb(tmp_path / "big.npz", 16 << 20)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        x = load_npz(path)["x"]
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert x.nbytes == 16 << 20 and not x.any() and x.flags.writeable
    assert peak < 1.25 * x.nbytes, peak / x.nbytes      # the array and a 1 MiB block; it was 2x


@pytest.mark.parametrize("spell", [str.upper, lambda s: s + "\n", lambda s: "  " + s.upper() + " \r\n"],
                         ids=["upper", "newline", "spaces"])
def test_a_checksum_in_another_spelling_is_accepted(tmp_path, spell):
    path = tmp_path / "a.npz"
    np.savez(path, a=np.arange(3))
    assert load_npz(path, sha256=spell(data.sha256_of(path)))["a"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("checksum, err, msg", [
    ("0" * 63, ValueError, r"'0{63}' is not a SHA-256 checksum: expected 64 hexadecimal digits, got "
                           r"63 characters\. The checksum is malformed, not the file"),
    ("g" * 64, ValueError, r"got 64 characters with some that are not hexadecimal"),
    ("", ValueError, r"got 0 characters"),
    (b"0" * 64, TypeError, r"sha256 must be a string of 64 hexadecimal digits, got bytes"),
], ids=["short", "not-hex", "empty", "bytes"])
def test_a_malformed_checksum_has_its_own_error(tmp_path, checksum, err, msg):
    path = tmp_path / "a.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(err, match=msg) as e:
        load_npz(path, sha256=checksum)
    assert not isinstance(e.value, DataFileError) and "corrupt" not in str(e.value)


@pytest.mark.parametrize("cap", [0, -1, 1.5, True, "64"])
def test_max_bytes_must_be_a_positive_integer(tmp_path, cap):
    path = tmp_path / "a.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
        load_npz(path, max_bytes=cap)
