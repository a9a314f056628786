"""Tests of kernels.cu: on the GPU when there is one, on rawdev's simulated GPU otherwise.

    pytest                          # a laptop: the simulator (a GPU machine: the GPU)
    pytest --rawdev-device=sim      # the simulator even on a GPU machine
    pytest --rawdev-device=cuda     # the GPU, or a usage error without one
"""
import fused
import numpy as np
import pytest
import rawdev

SEED = int(np.random.SeedSequence().entropy % 2**32)


@pytest.fixture
def rng():
    print(f"seed {SEED}")   # shown with a failure: rerun with this seed to reproduce it
    return np.random.default_rng(SEED)


@pytest.mark.cuda
@pytest.mark.parametrize("n", [1, 255, 257, 3000])
def test_axpy_relu_matches_numpy(device, rng, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    got = fused.axpy_relu(-1.5, rawdev.tensor(x, device=device), rawdev.tensor(y, device=device))
    ref = np.maximum(-1.5 * x.astype(np.float64) + y, 0)
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-6, atol=1e-6, err_msg=f"seed {SEED}")


@pytest.mark.cuda
def test_axpy_relu_takes_non_contiguous_inputs(device, rng):
    x = rng.standard_normal((20, 30)).astype(np.float32)
    y = rng.standard_normal((30, 20)).astype(np.float32)
    xt = rawdev.tensor(x, device=device).t()   # a transposed view: the wrapper makes it contiguous
    got = fused.axpy_relu(2.0, xt, rawdev.tensor(y, device=device))
    np.testing.assert_allclose(got.cpu().numpy(), np.maximum(2.0 * x.T.astype(np.float64) + y, 0), rtol=1e-6,
                               atol=1e-6, err_msg=f"seed {SEED}")


@pytest.mark.cuda
@pytest.mark.parametrize("shape", [(1, 1), (5, 300), (3, 128)])
def test_row_sums_match_numpy(device, rng, shape):
    m = rng.standard_normal(shape).astype(np.float32)
    got = fused.row_sums(rawdev.tensor(m, device=device))
    ref = m.astype(np.float64).sum(axis=1)
    assert np.abs(got.cpu().numpy() - ref).max() <= 1e-5 * np.abs(m).sum(axis=1).max(), f"seed {SEED}"


def test_no_out_of_bounds_access_at_the_edges(sanitize, device, rng):
    """Under the sanitizer, sizes around the block size: an access past an allocation raises at its launch."""
    for n in (1, 255, 256, 257):
        x = rawdev.tensor(rng.standard_normal(n).astype(np.float32), device=device)
        fused.axpy_relu(1.0, x, x)
    for shape in ((1, 1), (2, 129)):
        fused.row_sums(rawdev.tensor(rng.standard_normal(shape).astype(np.float32), device=device))
    sanitize.check()   # nothing queued faults either


def test_a_wrong_argument_names_the_parameter(device):
    x = rawdev.zeros(4, device=device)
    with pytest.raises(TypeError, match=r"argument 3 \(float a \(\.f32\)\) of axpy_relu is a value, not a pointer"):
        fused.MODULE.get_function("axpy_relu")(1, 32, (x, x, x, x, 4))


@pytest.mark.cuda
@pytest.mark.cc(">=8.0")
def test_on_an_ampere_class_device(device, rng):
    """Compiled for the device's architecture (compute_80 on the simulated Ampere GPU)."""
    assert rawdev.cuda.get_device_capability() >= (8, 0)
    x = rng.standard_normal(100).astype(np.float32)
    got = fused.axpy_relu(1.0, rawdev.tensor(x, device=device), rawdev.zeros(100, device=device))
    np.testing.assert_allclose(got.cpu().numpy(), np.maximum(x.astype(np.float64), 0), rtol=1e-6)
