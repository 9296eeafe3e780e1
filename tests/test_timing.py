import pytest

from roofline.errors import BadInput
from roofline.measure.timing import time_calls


class FakeClock:
    """Each call of the timed function advances time by the next duration given."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = iter(durations)

    def __call__(self):
        return self.now

    def work(self):
        self.now += next(self.durations)


def test_median_spread_and_single_call():
    clock = FakeClock([1.0, 1.0] + [0.010, 0.012, 0.011, 0.020, 0.010])
    t = time_calls(clock.work, repeats=5, warmup=2, min_sample_s=0.0, clock=clock)
    assert t.number == 1
    assert t.single_call == 1.0
    assert t.median == pytest.approx(0.011)
    assert t.best == pytest.approx(0.010)
    assert t.spread == pytest.approx(2.0)
    assert t.noisy


def test_calls_per_sample_amortise_fast_kernels():
    clock = FakeClock([1e-4] * 1000)
    t = time_calls(clock.work, repeats=3, warmup=1, min_sample_s=0.005, clock=clock)
    assert t.number == 50
    assert t.median == pytest.approx(1e-4)
    assert not t.noisy


def test_sync_runs_around_every_sample():
    calls = []
    time_calls(lambda: calls.append("f"), repeats=3, warmup=2, sync=lambda: calls.append("s"), min_sample_s=0)
    assert calls.count("s") >= 2 * 3


@pytest.mark.parametrize("repeats,warmup", [(0, 1), (3, -1)])
def test_bad_arguments(repeats, warmup):
    with pytest.raises(BadInput):
        time_calls(lambda: None, repeats=repeats, warmup=warmup)
