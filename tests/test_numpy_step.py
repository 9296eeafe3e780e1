import numpy as np
import pytest

from roofline.errors import BackendUnavailable, BadInput, KernelMismatch
from roofline.measure import numpy_step


def test_decode_step_computes_w_times_x(small_machine):
    step = numpy_step.decode_step(96, 3)
    assert step.regime == "dram"
    for i in range(len(step.pool) + 2):
        w = step.pool[i % len(step.pool)]
        got = np.array(step())
        np.testing.assert_allclose(got, w.astype(np.float64) @ step.x.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_float64_step(small_machine):
    step = numpy_step.decode_step(64, 2, dtype="float64")
    assert step.dtype == "float64" and step.itemsize == 8


def test_dram_pool_exceeds_four_times_the_llc_it_was_given(small_machine):
    llc = 3 * 2**20 + 12345
    step = numpy_step.decode_step(128, 1, llc=llc)
    assert step.pool_bytes >= 4 * llc
    assert step.pool_bytes - 128 * 128 * 4 < 4 * llc  # and not a matrix more than needed
    assert step.flops == 2 * 128 * 128 * 1
    assert step.bytes_moved == 4 * (128 * 128 + 2 * 128)


def test_cache_resident_is_one_matrix_and_refused_when_it_would_not_fit(small_machine):
    step = numpy_step.decode_step(256, 8, regime="cache")  # 256 KiB in a 1 MiB LLC
    assert len(step.pool) == 1 and step.regime == "cache"
    with pytest.raises(BackendUnavailable, match="not cache-resident"):
        numpy_step.decode_step(1024, 1, regime="cache")  # 4 MiB


def test_validation_catches_a_wrong_blas(small_machine, monkeypatch):
    real = np.matmul

    def wrong(a, b, out=None):
        res = real(a, b, out=out)
        res[len(res) // 2] += 1.0  # one wrong row, as a broken kernel might give
        return res

    monkeypatch.setattr(numpy_step.np, "matmul", wrong)
    with pytest.raises(KernelMismatch, match="no figure will be reported"):
        numpy_step.decode_step(64, 4)


@pytest.mark.parametrize("where", ["first", "last", "transposed"])
def test_a_sample_of_rows_catches_a_wrong_kernel_of_a_large_step(where, small_machine, monkeypatch):
    """Above VALIDATE_ROWS rows the check reads a sample of rows, the first and the last always among them."""
    monkeypatch.setattr(numpy_step, "VALIDATE_ROWS", 16)
    real = np.matmul

    def wrong(a, b, out=None):
        if where == "transposed":
            return real(a.T, b, out=out)
        res = real(a, b, out=out)
        res[0 if where == "first" else -1] += 1.0
        return res

    numpy_step.decode_step(64, 2)  # the right kernel passes on its sample
    monkeypatch.setattr(numpy_step.np, "matmul", wrong)
    with pytest.raises(KernelMismatch, match="no figure will be reported"):
        numpy_step.decode_step(64, 2)
    rows = numpy_step.checked_rows(64)
    assert len(rows) == 16 and rows[0] == 0 and rows[-1] == 63 and len(set(rows)) == 16
    assert numpy_step.checked_rows(16) is None


def test_validation_catches_nan(small_machine, monkeypatch):
    monkeypatch.setattr(numpy_step.np, "matmul", lambda a, b, out=None: np.full((a.shape[0], b.shape[1]), np.nan))
    with pytest.raises(KernelMismatch):
        numpy_step.decode_step(64, 1)


@pytest.mark.parametrize("n,batch", [(0, 1), (-4, 1), (64, 0), (64, 1.5), ("64", 1), (True, 1)])
def test_bad_sizes(n, batch, small_machine):
    with pytest.raises(BadInput):
        numpy_step.decode_step(n, batch)


def test_unknown_regime(small_machine):
    with pytest.raises(BadInput, match="regime"):
        numpy_step.decode_step(64, 1, regime="l2")
