"""rawdev.distributed.checkpoint (DCP): save and load in place, name-keyed optimizer state, Stateful objects,
PyTorch's errors for missing keys and size mismatches, a crash that leaves no loadable half-checkpoint, and two
ranks saving one checkpoint (rank 0 writes, every rank loads)."""
import json
import os

import numpy as np
import pytest
import rawdev
import rawdev.distributed.checkpoint as dcp
from rawdev import nn
from rawdev.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_state_dict,
)

from _dist_ranks import run_ranks


def _model(seed):
    rawdev.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))


def _train(model, opt, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rawdev.tensor(rng.standard_normal((4, 3)).astype(np.float32)).to(next(model.parameters()).device)
        opt.zero_grad()
        model(x).square().sum().backward()
        opt.step()


def _same_params(a, b):
    return all(np.array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())
               for p, q in zip(a.parameters(), b.parameters()))


def test_resume_from_a_checkpoint_continues_bit_for_bit(tmp_path):
    _resume(tmp_path, "cpu")


def test_resume_on_cuda_loads_into_the_device_tensors(tmp_path, driver):
    _resume(tmp_path, "cuda")


def _resume(tmp_path, device):
    model = _model(0).to(device)
    opt = rawdev.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    _train(model, opt, 3, seed=1)
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd, "epoch": 7, "note": ["a", 1.5]}, checkpoint_id=tmp_path / "ck")

    fresh = _model(99).to(device)
    fresh_opt = rawdev.optim.AdamW(fresh.parameters(), lr=0.5)
    params_before = [p for p in fresh.parameters()]
    msd2, osd2 = get_state_dict(fresh, fresh_opt)
    state = {"model": msd2, "optim": osd2, "epoch": 0, "note": None}
    dcp.load(state, checkpoint_id=tmp_path / "ck")
    set_state_dict(fresh, fresh_opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert state["epoch"] == 7 and state["note"] == ["a", 1.5]
    assert fresh_opt.param_groups[0]["lr"] == 0.01 and fresh_opt.param_groups[0]["weight_decay"] == 0.1
    assert all(p is q for p, q in zip(fresh.parameters(), params_before))   # loaded in place
    assert next(fresh.parameters()).device.type == device
    _train(model, opt, 2, seed=2)
    _train(fresh, fresh_opt, 2, seed=2)
    assert _same_params(model, fresh)


def test_stateful_model_and_fresh_optimizer_load_directly(tmp_path):
    model, other = _model(0), _model(1)
    opt = rawdev.optim.Adam(model.parameters(), lr=0.02)
    _train(model, opt, 2, seed=3)
    dcp.save({"model": model, "optim": opt}, checkpoint_id=tmp_path)
    other_opt = rawdev.optim.Adam(other.parameters())   # no state yet: rebuilt from the checkpoint
    dcp.load({"model": other, "optim": other_opt}, checkpoint_id=tmp_path)
    assert len(other_opt.state) == 4 and other_opt.param_groups[0]["lr"] == 0.02
    _train(model, opt, 1, seed=4)
    _train(other, other_opt, 1, seed=4)
    assert _same_params(model, other)


def test_files_are_safetensors_and_json_and_hold_no_pickle(tmp_path):
    dcp.save({"w": rawdev.arange(6.0).reshape(2, 3), "k": {"n": 3}}, checkpoint_id=tmp_path)
    assert sorted(os.listdir(tmp_path)) == [".metadata", "__0_0.distcp"]
    doc = json.loads((tmp_path / ".metadata").read_text())
    assert doc["entries"]["w"]["tensor"] == {"dtype": "float32", "size": [2, 3], "file": "__0_0.distcp"}
    from safetensors.numpy import load_file
    assert load_file(str(tmp_path / "__0_0.distcp"))["w"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_missing_key_and_size_mismatch_raise_pytorchs_errors(tmp_path):
    dcp.save({"w": rawdev.zeros(2, 3)}, checkpoint_id=tmp_path)
    with pytest.raises(RuntimeError, match=r"^Missing key in checkpoint state_dict: b\.$"):
        dcp.load({"w": rawdev.zeros(2, 3), "b": rawdev.zeros(1)}, checkpoint_id=tmp_path)
    with pytest.raises(ValueError, match=r"Size mismatch between saved torch\.Size\(\[2, 3\]\) and current: "
                                         r"torch\.Size\(\[3, 2\]\) for w"):
        dcp.load({"w": rawdev.zeros(3, 2)}, checkpoint_id=tmp_path)
    kept = {"w": rawdev.ones(2, 3), "b": rawdev.full((1,), 5.0)}
    dcp.load(kept, checkpoint_id=tmp_path, planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert kept["w"].sum().item() == 0 and kept["b"].item() == 5.0


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(RuntimeError, match="`checkpoint_id` must be specified if storage_writer is None"):
        dcp.save({"w": rawdev.zeros(1)})
    with pytest.raises(TypeError, match=r"'opt.fn' cannot be saved"):
        dcp.save({"opt": {"fn": lambda: 0}}, checkpoint_id=tmp_path / "x")

    class Planner(dcp.DefaultSavePlanner):
        pass
    with pytest.raises(NotImplementedError, match="planner of type .*Planner is not supported"):
        dcp.save({"w": rawdev.zeros(1)}, checkpoint_id=tmp_path / "y", planner=Planner())
    with pytest.raises(dcp.CheckpointException, match="no checkpoint in .*missing"):
        os.makedirs(tmp_path / "empty")
        dcp.load({"w": rawdev.zeros(1)}, checkpoint_id=tmp_path / "empty")
    os.makedirs(tmp_path / "torch")
    (tmp_path / "torch" / ".metadata").write_bytes(b"\x80\x04\x95 not read")
    with pytest.raises(dcp.CheckpointException, match="written by PyTorch.*pickle, which rawdev never reads"):
        dcp.load({"w": rawdev.zeros(1)}, checkpoint_id=tmp_path / "torch")
    with pytest.raises(dcp.CheckpointException, match="overwrite=False"):
        dcp.save({"w": rawdev.zeros(1)}, checkpoint_id=tmp_path / "z")
        dcp.save({"w": rawdev.zeros(1)}, storage_writer=dcp.FileSystemWriter(tmp_path / "z", overwrite=False))


def test_a_save_that_fails_leaves_no_loadable_mixture(tmp_path, monkeypatch):
    dcp.save({"w": rawdev.zeros(2)}, checkpoint_id=tmp_path)
    import rawdev.distributed.checkpoint.state_dict_saver as saver

    def dies(*a, **k):
        raise OSError("disk full (injected)")
    monkeypatch.setattr(saver, "write_metadata", dies)
    with pytest.raises(OSError, match="injected"):
        dcp.save({"w": rawdev.ones(2)}, checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match="did not finish"):
        dcp.load({"w": rawdev.zeros(2)}, checkpoint_id=tmp_path)


def test_deprecated_names_and_filesystem_storage(tmp_path):
    with pytest.warns(FutureWarning, match="deprecated"):
        dcp.save_state_dict({"w": rawdev.full((2,), 3.0)}, storage_writer=dcp.FileSystemWriter(tmp_path))
    out = {"w": rawdev.zeros(2)}
    with pytest.warns(FutureWarning, match="deprecated"):
        dcp.load_state_dict(state_dict=out, storage_reader=dcp.FileSystemReader(tmp_path))
    assert out["w"].tolist() == [3.0, 3.0]


def test_state_dict_options_and_wrapper_prefixes():
    model = _model(0)
    model[0].weight.requires_grad_(False)
    sd = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True))
    assert sorted(sd) == ["0.bias", "2.bias", "2.weight"]
    only = get_model_state_dict(model, submodules={model[2]}, options=StateDictOptions(keep_submodule_prefixes=False))
    assert sorted(only) == ["bias", "weight"]
    opt = rawdev.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1, momentum=0.9)
    flat = get_optimizer_state_dict(model, opt, options=StateDictOptions(flatten_optimizer_state_dict=True))
    assert "state.2.weight.momentum_buffer" in flat and flat["param_groups.2.weight.lr"] == 0.1
    assert all(p.grad is None for p in model.parameters())   # the lr-0 step that made the state left no grads
    assert model[2].weight.detach().numpy().tolist() == _model(0)[2].weight.detach().numpy().tolist()


def test_two_ranks_save_once_and_both_load(tmp_path):
    ck = tmp_path / "shared_ck"
    body = f"""
    import rawdev.distributed.checkpoint as dcp
    rawdev.manual_seed(0)
    m = rawdev.nn.Linear(3, 2)
    dcp.save({{"m": m.state_dict(), "rank_saw": RANK}}, checkpoint_id={str(ck)!r})
    report("files", sorted(os.listdir({str(ck)!r})))
    rawdev.manual_seed(5 + RANK)
    m2 = rawdev.nn.Linear(3, 2)
    st = {{"m": m2.state_dict(), "rank_saw": -1}}
    dcp.load(st, checkpoint_id={str(ck)!r})
    report("equal", bool((m2.weight == m.weight).all().item()))
    report("rank_saw", st["rank_saw"])
    """
    ranks = run_ranks(tmp_path, body, world=2)
    for r in ranks:
        assert r.rc == 0, r
        assert r.results["files"] == [".metadata", "__0_0.distcp"], r
        assert r.results["equal"] is True and r.results["rank_saw"] == 0, r
