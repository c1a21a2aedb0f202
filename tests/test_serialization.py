"""minigrad.save / minigrad.load (no pickle), and pickle / deepcopy of trained models and optimizers."""

import copy
import json
import pickle
import zipfile

import numpy as np
import pytest

import minigrad
from minigrad import Tensor, nn, optim
from minigrad.data import DataFileError


def trained(seed=0, steps=3):
    """A small model with a BatchNorm layer after a few Adam steps: parameters, grads, buffers, state."""
    rng = np.random.default_rng(seed)
    model = nn.Sequential(nn.Linear(4, 6, rng=rng), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3, rng=rng))
    opt = optim.Adam(model.parameters(), lr=0.01)
    x, y = rng.standard_normal((10, 4)), rng.integers(0, 3, 10)
    for _ in range(steps):
        opt.zero_grad()
        model(Tensor(x)).cross_entropy_with_logits(y).backward()
        opt.step()
    return model, opt, x, y


def same_model(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(sa[k].dtype == sb[k].dtype and np.array_equal(sa[k], sb[k])
                                        for k in sa)


def same_optimizer_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    if sa["param_groups"] != sb["param_groups"] or sa["steps"] != sb["steps"]:
        return False
    if sa["state"].keys() != sb["state"].keys():
        return False
    return all(s.keys() == sb["state"][i].keys()
               and all(np.array_equal(v, sb["state"][i][k]) for k, v in s.items())
               for i, s in sa["state"].items())


# ------------------------------------------------------------------- files

def test_a_model_and_its_optimizer_written_then_read_are_the_same(tmp_path):
    model, opt, x, y = trained()
    path = tmp_path / "ckpt.npz"
    minigrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    ckpt = minigrad.load(path)
    assert ckpt["epoch"] == 3 and sorted(ckpt) == ["epoch", "model", "optimizer"]
    fresh, _, _, _ = trained(seed=9, steps=0)
    fresh_opt = optim.Adam(fresh.parameters(), lr=0.5)
    fresh.load_state_dict(ckpt["model"])
    fresh_opt.load_state_dict(ckpt["optimizer"])
    assert same_model(model, fresh) and same_optimizer_state(opt, fresh_opt)
    assert ckpt["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)      # a tuple stays a tuple
    assert list(ckpt["optimizer"]["state"]) == [0, 1, 2, 3, 4, 5]             # int keys stay ints
    model.eval(), fresh.eval()
    np.testing.assert_array_equal(fresh(Tensor(x)).data, model(Tensor(x)).data)
    for m, o in ((model, opt), (fresh, fresh_opt)):       # and training goes on identically
        m.train()
        o.zero_grad()
        m(Tensor(x)).cross_entropy_with_logits(y).backward()
        o.step()
    assert same_model(model, fresh)


def test_the_file_is_an_npz_with_a_json_part_and_no_pickle(tmp_path):
    model, opt, _, _ = trained()
    path = tmp_path / "m.npz"
    minigrad.save(model.state_dict(), path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        head = json.loads(np.load(zf.open("structure.json.npy"), allow_pickle=False).tobytes())
    assert "structure.json.npy" in names and len(names) == 1 + len(model.state_dict())
    assert head["format"] == "minigrad.save" and head["version"] == 1
    with np.load(path, allow_pickle=False) as f:          # NumPy's own loader reads it without pickle
        assert len(f.files) == len(names)


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, float("inf"), "text", [1, [2, 3]], (1, (2.0, "x")), {"a": {0: [None]}},
    np.arange(6, dtype=np.int32).reshape(2, 3), np.asfortranarray(np.ones((3, 2))), np.zeros((0, 4)),
    np.float32(1.5), np.array(True), np.arange(4.0)[::2],
], ids=lambda v: type(v).__name__)
def test_values_round_trip_with_their_types(tmp_path, value):
    minigrad.save({"v": value}, tmp_path / "v.npz")
    got = minigrad.load(tmp_path / "v.npz")["v"]
    if isinstance(value, (np.ndarray, np.generic)):
        assert type(got) is type(value) and got.dtype == value.dtype and np.array_equal(got, value)
    else:
        assert got == value and type(got) is type(value)


def test_a_leaf_tensor_round_trips_with_its_flags(tmp_path):
    t = Tensor([1.0, 2.0], requires_grad=True, name="w", dtype=np.float32)
    minigrad.save([t, Tensor([3.0])], tmp_path / "t.npz")
    a, b = minigrad.load(tmp_path / "t.npz")
    assert a.requires_grad and a.name == "w" and a.dtype == np.float32 and a.is_leaf
    assert not b.requires_grad and b.data.tolist() == [3.0]


@pytest.mark.parametrize("obj, msg", [
    ({"f": lambda: 0}, r"save: obj\['f'\] is a function, which minigrad.save does not write"),
    ({1.5: 0}, r"save: obj has a key 1.5 of type float; keys must be str or int"),
    ([np.array([object()])], r"save: obj\[0\] is an array of dtype object"),
    ({"m": nn.Linear(2, 2, rng=0)}, r"save: obj\['m'\] is a Linear.*save model.state_dict\(\)"),
    ([Tensor([1.0], requires_grad=True) * 2], r"save: obj\[0\] is a Tensor computed by 'mul'"),
], ids=["function", "float-key", "object-array", "module", "non-leaf"])
def test_what_cannot_be_saved_is_refused_and_an_old_file_is_kept(tmp_path, obj, msg):
    path = tmp_path / "keep.npz"
    minigrad.save({"old": 1}, path)
    with pytest.raises(TypeError, match=msg):
        minigrad.save(obj, path)
    assert minigrad.load(path) == {"old": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]     # no temporary left behind


def _rewrite(path, structure=None, extra=None):
    """The file at path with its JSON part replaced, or an extra array added."""
    arrays = minigrad.data.load_npz(path)
    if structure is not None:
        arrays["structure.json"] = np.frombuffer(structure.encode(), dtype=np.uint8)
    arrays.update(extra or {})
    np.savez(path, **arrays)


@pytest.mark.parametrize("change, msg", [
    (dict(structure="not json"), r"structure.json of .* is not valid JSON"),
    (dict(structure='{"format": "other", "root": 1}'), r"is not a minigrad.save file"),
    (dict(structure='{"format": "minigrad.save", "version": 7, "root": 1}'), r"format version 7"),
    (dict(structure='{"format": "minigrad.save", "version": 1, "root": {"array": "zz"}}'),
     r"names an array 'zz' that the file does not hold"),
    (dict(structure='{"format": "minigrad.save", "version": 1, "root": {"eval": "x"}}'),
     r"the entry at obj is malformed"),
    (dict(extra={"a99": np.ones(2)}), r"holds arrays \['a99'\] that its structure.json does not mention"),
], ids=["json", "format", "version", "missing-array", "unknown-tag", "extra-array"])
def test_a_file_that_was_not_written_by_save_is_refused(tmp_path, change, msg):
    path = tmp_path / "f.npz"
    minigrad.save({"x": np.ones(3)}, path)
    _rewrite(path, **change)
    with pytest.raises(DataFileError, match=msg):
        minigrad.load(path)


def test_plain_npz_files_and_pickles_are_refused(tmp_path):
    np.savez(tmp_path / "plain.npz", x=np.ones(2))
    with pytest.raises(DataFileError, match="has no structure.json member; it was not written by "
                                            "minigrad.save"):
        minigrad.load(tmp_path / "plain.npz")
    np.savez(tmp_path / "obj.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DataFileError, match="holds Python objects"):
        minigrad.load(tmp_path / "obj.npz")


def test_load_caps_the_inflated_size(tmp_path):
    minigrad.save({"x": np.zeros(100_000)}, tmp_path / "big.npz")
    with pytest.raises(DataFileError, match="max_bytes=10,000"):
        minigrad.load(tmp_path / "big.npz", max_bytes=10_000)
    assert minigrad.load(tmp_path / "big.npz", max_bytes=10 ** 6)["x"].shape == (100_000,)


# ------------------------------------------------------ pickle and deepcopy

@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_trained_model_and_optimizer_pickle_and_deepcopy(how):
    model, opt, x, y = trained()
    assert all(p.grad is not None for p in model.parameters())       # after a backward
    if how == "pickle":
        model2, opt2 = pickle.loads(pickle.dumps((model, opt)))
    else:
        model2, opt2 = copy.deepcopy((model, opt))
    assert same_model(model, model2) and same_optimizer_state(opt, opt2)
    assert all(p is q for p, q in zip(opt2.params, model2.parameters()))   # still the same tensors
    assert all(p is not q for p, q in zip(model.parameters(), model2.parameters()))
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.grad, q.grad)
        assert q.is_leaf and q.requires_grad
    for m, o in ((model, opt), (model2, opt2)):                       # both train on identically
        o.zero_grad()
        m(Tensor(x)).cross_entropy_with_logits(y).backward()
        o.step()
    assert same_model(model, model2)
