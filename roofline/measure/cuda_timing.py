"""CUDA device timing: how long work on the GPU takes.

Device work is asynchronous, so host clocks around a launch measure the launch, not the work.
:func:`time_events` puts CUDA events around many back-to-back calls; :func:`time_graph`
captures the calls into a CUDA graph and times its replays, which also removes the gaps
between launches. Both return the CPU twin's :class:`~roofline.measure.timing.Timing`, whose
``single_call`` is one call timed on its own between two events: launch latency included.

The device is reached through a small :class:`Device` protocol (events, synchronize, graph
capture) so the timing logic is tested on CPU with a fake; :class:`TorchCuda` is the real one.
torch is imported lazily: nothing here needs it until a GPU is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from ..errors import BackendUnavailable, BadInput
from ..host import import_torch
from .timing import Timing

#: Upper bound on calls per timed sample (a kernel of a few µs needs ~1000 for a 5 ms sample).
MAX_CALLS_PER_SAMPLE = 4096


class Event(Protocol):
    def record(self) -> None: ...

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both recorded and complete)."""
        ...


class Device(Protocol):
    """What the timing needs from a device."""

    def event(self) -> Event: ...

    def synchronize(self) -> None: ...

    def graph(self, fn: Callable[[], object], calls: int) -> Callable[[], None]:
        """Capture ``calls`` calls of ``fn`` into a graph; return a function that replays it."""
        ...


class TorchCuda:
    """The current CUDA device through torch: events, synchronize, CUDA-graph capture."""

    def __init__(self) -> None:
        torch = import_torch()
        if not torch.cuda.is_available():
            raise BackendUnavailable(f"torch {torch.__version__} sees no CUDA device")
        self.torch = torch

    def event(self) -> Event:
        return self.torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def graph(self, fn: Callable[[], object], calls: int) -> Callable[[], None]:
        torch = self.torch
        # Warm up on a side stream first, as torch's graph docs require (workspaces, handles).
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        self.synchronize()
        return g.replay


def _check(repeats: int, warmup: int, min_sample_s: float) -> None:
    if repeats < 1 or warmup < 0 or not min_sample_s > 0:
        raise BadInput(f"repeats must be ≥ 1, warmup ≥ 0 and min_sample_s > 0, got {repeats}, {warmup}, {min_sample_s}")


def _span(device: Device, fn: Callable[[], object], times: int, prime: bool = False) -> float:
    """Seconds between two events around ``times`` calls of ``fn`` (synchronized).

    ``prime``: one untimed call first, so the device is busy when the start event is recorded
    and the timed calls queue up behind it: no launch latency inside the span.
    """
    start, end = device.event(), device.event()
    if prime:
        fn()
    start.record()
    for _ in range(times):
        fn()
    end.record()
    device.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    if not math.isfinite(seconds) or seconds < 0:
        raise BadInput(f"the device events gave an impossible time: {seconds!r} s")
    return seconds


def _calls_for(per_call: float, min_sample_s: float, multiple: int = 1) -> int:
    """Calls per sample so one sample lasts ≥ ``min_sample_s``, rounded up to ``multiple``."""
    number = MAX_CALLS_PER_SAMPLE if per_call <= 0 else min(MAX_CALLS_PER_SAMPLE, math.ceil(min_sample_s / per_call))
    number = max(1, number)
    return -(-number // multiple) * multiple


def _calibrate(fn: Callable[[], object], device: Device, warmup: int, min_sample_s: float, multiple: int):
    """Warm up; then (one call alone between events, calls per sample from a trial of 8)."""
    for _ in range(warmup):
        fn()
    device.synchronize()
    single = _span(device, fn, 1)
    trial = _span(device, fn, 8, prime=True) / 8
    return single, _calls_for(trial, min_sample_s, multiple)


def time_events(
    fn: Callable[[], object],
    device: Device,
    repeats: int = 7,
    warmup: int = 3,
    min_sample_s: float = 0.005,
    multiple: int = 1,
) -> Timing:
    """Events around ``number`` back-to-back calls per sample; the launch cost is amortized.

    Each sample's calls queue behind one untimed call, so what the events see is the device
    running them back to back: the larger of kernel time and launch rate. ``single_call`` is
    one call between two events after the device went idle (launch latency included).
    ``number`` comes from a trial of 8 calls and is rounded up to ``multiple`` (the weight
    pool's size, so every sample reads every matrix equally).
    """
    _check(repeats, warmup, min_sample_s)
    single, number = _calibrate(fn, device, warmup, min_sample_s, multiple)
    samples = [_span(device, fn, number, prime=True) / number for _ in range(repeats)]
    if min(samples) <= 0:
        raise BadInput("device samples of zero length: the events are too coarse for this kernel")
    return Timing(per_call=tuple(samples), number=number, single_call=single)


def time_graph(
    fn: Callable[[], object],
    device: Device,
    repeats: int = 7,
    warmup: int = 3,
    min_sample_s: float = 0.005,
    multiple: int = 1,
) -> Timing:
    """Capture ``number`` calls into one CUDA graph and time its replays with events.

    Each sample is one replay queued behind an untimed one; per-call time is the replay's time
    over ``number``. The graph
    removes launch overhead and the gaps between kernels: what remains is the device's own
    time per call. ``single_call`` is one eager call between two events, as in :func:`time_events`.
    """
    _check(repeats, warmup, min_sample_s)
    single, number = _calibrate(fn, device, warmup, min_sample_s, multiple)
    replay = device.graph(fn, number)
    replay()  # the first replay uploads the graph
    device.synchronize()
    samples = [_span(device, replay, 1, prime=True) / number for _ in range(repeats)]
    if min(samples) <= 0:
        raise BadInput("graph replays of zero length: the events are too coarse for this kernel")
    return Timing(per_call=tuple(samples), number=number, single_call=single)


def time_device(
    fn: Callable[[], object],
    device: Device,
    method: str = "graph",
    repeats: int = 7,
    warmup: int = 3,
    min_sample_s: float = 0.005,
    multiple: int = 1,
) -> tuple[Timing, str]:
    """Time with a CUDA graph (falling back to events if capture fails) or events; say which.

    Returns the timing and the method used: ``"cuda-graph"`` or ``"cuda-events"``.
    """
    if method not in ("graph", "events"):
        raise BadInput(f"unknown device timing method {method!r} (use graph or events)")
    if method == "graph":
        try:
            return time_graph(fn, device, repeats, warmup, min_sample_s, multiple), "cuda-graph"
        except RuntimeError:  # capture unsupported for this op: events still amortize the launches
            device.synchronize()
    return time_events(fn, device, repeats, warmup, min_sample_s, multiple), "cuda-events"
