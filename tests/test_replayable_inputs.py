"""The tests' random inputs come from the run's base seed (tests/conftest.py), so a failure can be replayed with
`pytest <test id> --rawdev-seed=N`: _refs.rng() and module-level generators draw from (base seed, test id)."""
import numpy as np

from _refs import rng
from conftest import _key, _seed, _unseeded_rng

MODULE_RNG = np.random.default_rng()


def test_rng_draws_from_the_base_seed_and_the_test_id(request):
    key = _key(request.node.nodeid)
    first, second = rng().random(4), rng().random(4)
    np.testing.assert_array_equal(first, _unseeded_rng([_seed["base"], key, 1]).random(4))
    np.testing.assert_array_equal(second, _unseeded_rng([_seed["base"], key, 2]).random(4))
    assert not np.array_equal(first, second)


def test_a_module_level_generator_is_reseeded_for_each_test(request):
    expect = np.random.Generator(np.random.PCG64([_seed["base"], _key(request.node.nodeid)])).random(3)
    np.testing.assert_array_equal(MODULE_RNG.random(3), expect)


def test_an_explicit_seed_is_left_alone():
    np.testing.assert_array_equal(np.random.default_rng(7).random(3), _unseeded_rng(7).random(3))
