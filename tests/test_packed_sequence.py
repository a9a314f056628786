"""PackedSequence and its conversions, and RNN/LSTM/GRU over packed batches: a packed batch must give every
sequence exactly what running that sequence alone gives (outputs, h_n, c_n and gradients), on the cpu and the
simulated GPU, unidirectional and bidirectional, sorted or not."""
import numpy as np
import pytest
import rawdev
from rawdev import nn
from rawdev.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

from _refs import rng


def test_pack_pad_round_trip_and_layout():
    r = rng()
    lens = [2, 5, 1, 3]
    x = r.standard_normal((5, 4, 2))
    p = pack_padded_sequence(rawdev.tensor(x), lens, enforce_sorted=False)
    assert p.batch_sizes.tolist() == [4, 3, 2, 1, 1] and p.batch_sizes.device.type == "cpu"
    assert p.sorted_indices.tolist() == [1, 3, 0, 2] and p.unsorted_indices.tolist() == [2, 0, 3, 1]
    expect = np.concatenate([x[t, [b for b in (1, 3, 0, 2) if lens[b] > t]] for t in range(5)])
    np.testing.assert_array_equal(p.data.numpy(), expect)
    padded, got_lens = pad_packed_sequence(p, batch_first=True, padding_value=-7.0, total_length=6)
    assert got_lens.tolist() == lens and tuple(padded.shape) == (4, 6, 2)
    for b, n in enumerate(lens):
        np.testing.assert_array_equal(padded[b, :n].numpy(), x[:n, b])
        assert (padded[b, n:].numpy() == -7.0).all()
    seqs = [rawdev.tensor(r.standard_normal((n, 3))) for n in (3, 1, 2)]
    back = unpack_sequence(pack_sequence(seqs, enforce_sorted=False))
    assert [s.tolist() for s in back] == [s.tolist() for s in seqs]
    assert [s.tolist() for s in unpad_sequence(pad_sequence(seqs), [3, 1, 2])] == [s.tolist() for s in seqs]
    assert isinstance(p, tuple) and p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.double().data.dtype is rawdev.float64 and p.to(rawdev.float32).data.dtype is rawdev.float32


def test_pack_errors_use_pytorch_wording():
    x = rawdev.zeros(4, 3)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [1, 4, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [4, 0, 1], enforce_sorted=False)
    p = pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        pad_packed_sequence(p, total_length=2)


def test_packed_sequence_moves_with_its_data(driver):
    p = pack_sequence([rawdev.tensor([1.0, 2.0]), rawdev.tensor([3.0])], enforce_sorted=False)
    q = p.cuda()
    assert q.is_cuda and q.data.is_cuda and q.sorted_indices.is_cuda and q.batch_sizes.device.type == "cpu"
    assert q.cpu().data.tolist() == p.data.tolist()
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        PackedSequence(p.data, p.batch_sizes.cuda())


def test_packed_gradients_flow_back_to_the_padded_input():
    r = rng()
    x = rawdev.tensor(r.standard_normal((4, 3, 2)), requires_grad=True)
    p = pack_padded_sequence(x, [4, 2, 1])
    (p.data * (rawdev.arange(p.data.numel(), dtype=rawdev.float64) + 1).reshape(p.data.shape)).sum().backward()
    g = x.grad.numpy()
    assert (g[2:, 1] == 0).all() and (g[1:, 2] == 0).all() and (g[:, 0] != 0).all()


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_rnn_over_a_packed_batch_equals_each_sequence_alone(mode, bidirectional, driver):
    r = rng()
    lens = [3, 6, 1, 4, 6]
    for dev, dt, tol in (("cpu", rawdev.float64, 1e-10), ("cuda", rawdev.float32, 2e-5)):
        rawdev.manual_seed(7)
        m = getattr(nn, mode)(3, 5, num_layers=2, bidirectional=bidirectional, batch_first=True).to(dev, dt)
        x = r.standard_normal((5, 6, 3))
        lstm = mode == "LSTM"
        dirs = 2 if bidirectional else 1
        h0 = r.standard_normal((2 * dirs, 5, 5))
        c0 = r.standard_normal((2 * dirs, 5, 5))
        tx = rawdev.tensor(x, dtype=dt, device=dev, requires_grad=True)
        th0 = rawdev.tensor(h0, dtype=dt, device=dev, requires_grad=True)
        tc0 = rawdev.tensor(c0, dtype=dt, device=dev)
        packed = pack_padded_sequence(tx, rawdev.tensor(lens), batch_first=True, enforce_sorted=False)
        out, hn = m(packed, (th0, tc0) if lstm else th0)
        assert isinstance(out, PackedSequence)
        padded, got = pad_packed_sequence(out, batch_first=True)
        assert got.tolist() == lens
        h_n, c_n = hn if lstm else (hn, None)
        gout = r.standard_normal(tuple(padded.shape))
        ((padded * rawdev.tensor(gout, dtype=dt, device=dev)).sum() + (h_n * h_n).sum()).backward()
        for b, n in enumerate(lens):
            xb = rawdev.tensor(x[b:b + 1, :n], dtype=dt, device=dev, requires_grad=True)
            hb = rawdev.tensor(h0[:, b:b + 1], dtype=dt, device=dev, requires_grad=True)
            cb = rawdev.tensor(c0[:, b:b + 1], dtype=dt, device=dev)
            ob, hnb = m(xb, (hb, cb) if lstm else hb)
            hb_n, cb_n = hnb if lstm else (hnb, None)
            np.testing.assert_allclose(padded[b, :n].detach().cpu().numpy(), ob[0].detach().cpu().numpy(),
                                       rtol=tol, atol=tol)
            assert (padded[b, n:].detach().cpu().numpy() == 0).all()
            np.testing.assert_allclose(h_n[:, b].detach().cpu().numpy(), hb_n[:, 0].detach().cpu().numpy(),
                                       rtol=tol, atol=tol)
            if lstm:
                np.testing.assert_allclose(c_n[:, b].detach().cpu().numpy(), cb_n[:, 0].detach().cpu().numpy(),
                                           rtol=tol, atol=tol)
            ((ob[0] * rawdev.tensor(gout[b, :n], dtype=dt, device=dev)).sum() + (hb_n * hb_n).sum()).backward()
            np.testing.assert_allclose(tx.grad[b, :n].cpu().numpy(), xb.grad[0].cpu().numpy(), rtol=tol * 10,
                                       atol=tol * 10)
            assert (tx.grad[b, n:].cpu().numpy() == 0).all()
            np.testing.assert_allclose(th0.grad[:, b].cpu().numpy(), hb.grad[:, 0].cpu().numpy(), rtol=tol * 10,
                                       atol=tol * 10)


@pytest.mark.slow
def test_packed_lstm_classifier_trains(driver):
    """An LSTM classifier over variable-length sequences, in the usual PyTorch pattern (sort-free packing, the
    last hidden state into a Linear) learns to tell whether a sequence's sum is positive (fixed data: a
    convergence check, not a random-input one)."""
    r = np.random.default_rng(3)
    rawdev.manual_seed(0)
    lstm, head = nn.LSTM(1, 16, batch_first=True).cuda(), nn.Linear(16, 2).cuda()
    opt = rawdev.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.02)
    for _ in range(60):
        lens = r.integers(1, 8, 16)
        x = np.zeros((16, 7, 1))
        for b, n in enumerate(lens):
            x[b, :n, 0] = r.standard_normal(n)
        y = (x.sum((1, 2)) > 0).astype(np.int64)
        packed = pack_padded_sequence(rawdev.tensor(x, dtype=rawdev.float32).cuda(), lens.tolist(),
                                      batch_first=True, enforce_sorted=False)
        _, (h, _) = lstm(packed)
        loss = nn.functional.cross_entropy(head(h[-1]), rawdev.tensor(y).cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.45
