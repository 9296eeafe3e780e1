import pytest

from roofline.errors import BadInput
from roofline.measure.timing import relative_iqr, time_calls, time_interleaved


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
    assert t.spread == pytest.approx(0.002 / 0.011)  # interquartile range ÷ median, not slowest ÷ fastest
    assert t.noisy


def test_one_stray_sample_does_not_make_a_timing_noisy():
    clock = FakeClock([1.0, 1.0] + [0.010] * 8 + [0.5])
    t = time_calls(clock.work, repeats=9, warmup=2, min_sample_s=0.0, clock=clock)
    assert t.median == pytest.approx(0.010) and t.spread == pytest.approx(0.0) and not t.noisy
    assert relative_iqr([1.0]) == 0.0
    assert relative_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)


def test_interleaved_kernels_take_their_samples_in_turn():
    order = []
    clock = FakeClock([0.001] * 1000)

    def kernel(name):
        def fn():
            order.append(name)
            clock.work()

        return fn

    a, b = time_interleaved([kernel("a"), kernel("b")], repeats=3, warmup=1, min_sample_s=0.002, clock=clock)
    assert a.number == b.number == 2 and len(a.per_call) == len(b.per_call) == 3
    timed = "".join(order[2:])  # after one warm-up call each: an untimed call, then 2 timed, per sample
    assert timed == "aaabbbbbbaaaaaabbb"  # round-robin, the order rotated each round


def test_interleaving_takes_more_samples_of_the_fast_kernel_only():
    clock = FakeClock([])

    def advance(seconds):
        def fn():
            clock.now += seconds

        return fn

    fast, slow = advance(0.001), advance(0.1)
    t_fast, t_slow = time_interleaved([fast, slow], repeats=2, warmup=1, min_sample_s=0, clock=clock, min_total_s=0.005)
    assert len(t_fast.per_call) == 5 and len(t_slow.per_call) == 2  # 5 × 1 ms reach min_total_s
    assert t_fast.median == pytest.approx(0.001) and t_slow.median == pytest.approx(0.1)


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


def test_settle_waits_until_no_other_thread_runs_and_no_longer_than_its_limit():
    from roofline.measure.timing import SETTLE_BLIND_S, settle

    clock = FakeClock([])

    def sleep(s):
        clock.now += s

    busy = iter([2, 1, 1, 0])
    assert settle(0.5, lambda: next(busy), clock, sleep) == pytest.approx(0.006)  # three 2 ms polls
    assert settle(0.5, lambda: 0, clock, sleep) == 0.0  # nothing spinning: no wait at all
    assert settle(0.5, lambda: 1, clock, sleep) == pytest.approx(0.5, abs=0.003)  # a thread that never sleeps
    assert settle(0.5, lambda: None, clock, sleep) == pytest.approx(SETTLE_BLIND_S)  # the OS does not say
    assert settle(0.1, lambda: None, clock, sleep) == pytest.approx(0.1)
