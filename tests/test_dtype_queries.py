"""The dtype queries of rawdev/ops/dtype_queries.py: numel, type_as and the complex-number queries a real-only
library answers trivially, on the cpu and the simulated GPU."""

import pytest
import rawdev


def test_numel_type_as():
    assert rawdev.numel(rawdev.ones(2, 3, 4)) == 24
    t = rawdev.tensor([1.7, -2.2]).type_as(rawdev.tensor([1]))
    assert t.dtype == rawdev.int64 and t.tolist() == [1, -2]


def test_real_only_complex_queries():
    x = rawdev.randn(3)
    assert x.real is x and x.conj() is x and rawdev.conj(x) is x and x.resolve_conj() is x
    assert not x.is_complex() and not rawdev.is_complex(x) and not x.is_conj()
    assert rawdev.positive(x) is x and x.sgn().tolist() == x.sign().tolist()
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = x.imag
    with pytest.raises(RuntimeError, match="not supported"):
        rawdev.positive(rawdev.tensor([True]))
