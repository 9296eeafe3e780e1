import numpy as np
import pytest

from roofline.errors import BadInput
from roofline.measure import pools


def test_shared_random_is_seeded_written_and_read_only(small_machine):
    a = pools.shared_random(3 * pools.CHUNK_ELEMENTS + 5, "float32", seed=7)
    assert a.size >= 3 * pools.CHUNK_ELEMENTS + 5
    assert np.all(a >= -1) and np.all(a < 1)
    assert np.count_nonzero(a) > 0.999 * a.size  # written data, not zero pages
    assert abs(float(a.mean())) < 0.01
    with pytest.raises(ValueError):
        a[0] = 1.0  # read-only mapping
    b = pools.shared_random(3 * pools.CHUNK_ELEMENTS + 5, "float32", seed=7)
    assert np.array_equal(a, b)
    c = pools.shared_random(pools.CHUNK_ELEMENTS, "float32", seed=8)
    assert not np.array_equal(a[: c.size], c)


def test_larger_buffer_is_a_superset(small_machine):
    small = np.array(pools.shared_random(pools.CHUNK_ELEMENTS, "float64", seed=1))
    large = pools.shared_random(4 * pools.CHUNK_ELEMENTS, "float64", seed=1)
    assert np.array_equal(small, large[: small.size])


def test_weight_pool_shape_and_dtype(small_machine):
    pool = pools.weight_pool(64, 5, "float32")
    assert pool.shape == (5, 64, 64) and pool.dtype == np.float32
    assert not np.array_equal(pool[0], pool[1])


def test_pool_too_large_for_memory_is_refused_before_allocation(small_machine, monkeypatch):
    monkeypatch.setattr(pools, "available_memory_bytes", lambda: 2**20)
    with pytest.raises(BadInput, match="GiB of memory is available"):
        pools.shared_random(2**20, "float32", seed=99)
    assert not list((small_machine / "cache").glob("*.bin"))


def test_unwritable_cache_dir_is_a_one_line_error(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(blocker / "sub"))
    with pytest.raises(BadInput, match="data cache"):
        pools.shared_random(10, "float32")


def test_unknown_dtype():
    with pytest.raises(BadInput, match="float32"):
        pools.numpy_dtype("int3")


def test_clear_cache(small_machine):
    pools.shared_random(10, "float32")
    assert pools.clear_cache() > 0
    assert not (small_machine / "cache").exists()
