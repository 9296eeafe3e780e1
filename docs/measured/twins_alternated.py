"""The run's timing and the twin's of one DRAM step, alternated in one process (same build, same threads)."""
import statistics, sys, time
from roofline.measure.numpy_step import decode_step
from roofline.measure.step import MIN_SAMPLE_S
from roofline.measure.timing import time_interleaved
from roofline.suite.harness import TWIN_SAMPLE_SECONDS
n, b = int(sys.argv[1]), int(sys.argv[2])
run_step = decode_step(n, b)            # the run's build
twin_step = decode_step(n, b)           # the twin's own build (its own pool, first-touched apart)
flops = 2.0 * n * n * b
for rnd in range(3):
    t = time_interleaved([run_step], repeats=3, warmup=2, min_sample_s=MIN_SAMPLE_S, min_total_s=0.15)[0]
    per = []
    for _ in range(5):                   # asv's samples of the twin: steps back to back for >= 0.1 s
        calls = max(1, round(TWIN_SAMPLE_SECONDS / t.median))
        t0 = time.perf_counter()
        for _ in range(calls):
            twin_step()
        per.append((time.perf_counter() - t0) / calls)
    tw = statistics.median(per)
    print(f"round {rnd}: run {flops / t.median / 1e9:6.1f} GFLOP/s  twin {flops / tw / 1e9:6.1f}  twin/run time {tw / t.median:.2f}")
