"""The suite's benchmark names, written once for what reads recorded results (compare, the report).

benchmarks/ defines them and asv files history under them; tests/test_golden.py holds each one
against the benchmark inventory.
"""

#: The decode classes, by the regime each measures: track_gflops (GFLOP/s) and track_bandwidth
#: (GB/s), params n and batch.
DECODE_CLASSES = {"DRAM": "decode.DecodeDRAM", "cache-resident": "decode.DecodeCacheResident"}
DECODE_TRACKS = {regime: f"{cls}.track_gflops" for regime, cls in DECODE_CLASSES.items()}
#: The CUDA decode class: track_gflops, track_bandwidth, track_seconds; params backend, dtype, n, batch.
CUDA_CLASS = "backends.CudaDecode"
BANDWIDTH_CEILING = "ceilings.MemoryBandwidth.track_bandwidth_ceiling"  # GB/s, param kind
PEAK_CEILING = "ceilings.GemmPeak.track_gemm_ceiling"  # GFLOP/s, param dtype
#: The roofs' referees, likwid-bench timed after each round of the roofs they referee: its load kernel inside
#: each memory level (GB/s, param level: L1 … DRAM) and its FMA peak (GFLOP/s, param dtype: float32, float64).
BANDWIDTH_REFEREE = "ceilings.BandwidthReferee.track_referee_bandwidth"
PEAK_REFEREE = "ceilings.PeakReferee.track_referee_peak"
#: The hierarchical roofline, param level (L1, L2, L3, DRAM): GB/s and the level's aggregate bytes.
LEVEL_BANDWIDTH = "ceilings.CacheBandwidth.track_bandwidth"
LEVEL_BYTES = "ceilings.CacheBandwidth.track_capacity"
#: A compute roof per dtype (fp64, fp32, bf16, fp16, int8), GFLOP/s.
COMPUTE_PEAK = "ceilings.ComputePeak.track_peak"
OBSERVED_CROSSOVER = "crossover.Crossover.track_observed_crossover_batch"
PREDICTED_CROSSOVER = "crossover.Crossover.track_predicted_crossover_batch"
#: The overhead roof in µs, param backend: {} is "single" (one call alone) or "amortized".
OVERHEAD = "backends.CallOverhead.track_{}_call"
#: A real model decoded here, param batch: tokens/s of transformers, of the lean path and of the bound
#: (the bound's time per step ÷ the measured one is each path's tokens/s ÷ the bound's).
MODEL_CLASS = "models.ModelDecode"
MODEL_TOKENS = f"{MODEL_CLASS}.track_tokens_per_s"
MODEL_LEAN_TOKENS = f"{MODEL_CLASS}.track_lean_tokens_per_s"
MODEL_BOUND_TOKENS = f"{MODEL_CLASS}.track_bound_tokens_per_s"
#: An engine decoding a GGUF here, params format and batch: tokens/s of the wall clock, of the engine's own
#: counters, of the bound and of the prediction (roofline.model.engine_bound), the kernel path
#: (a code: roofline.model.engine_bound.KERNEL_PATH_CODES), the bytes a step reads and their rate; at batch 1
#: only, the format's own: its engine roof (GFLOP/s, a prompt in one call), its crossover batch predicted and observed.
ENGINE_CLASSES = {"llama.cpp": "engines.LlamaCppDecode"}
ENGINE_TRACKS = {
    "tokens_per_s": "track_tokens_per_s",
    "counter_tokens_per_s": "track_counter_tokens_per_s",
    "bound_tokens_per_s": "track_bound_tokens_per_s",
    "predicted_tokens_per_s": "track_predicted_tokens_per_s",
    "kernel_path": "track_kernel_path",
    "step_bytes": "track_step_bytes",
    "effective_gbps": "track_effective_bandwidth",
    "engine_roof": "track_engine_roof",
    "predicted_crossover": "track_predicted_crossover_batch",
    "observed_crossover": "track_observed_crossover_batch",
}
#: How the machine was while the run measured (roofline.suite.run): share of CPU time that was the
#: suite's (fraction), the reference kernel's end ÷ start time (ratio), the BLAS threads used.
QUIETNESS = "conditions.RunConditions.track_quietness"
REFERENCE_DRIFT = "conditions.RunConditions.track_reference_drift"
BLAS_THREADS_USED = "conditions.RunConditions.track_blas_threads"
#: Benchmarks that measure the machine rather than the code (its ceilings, the crossover batch they set,
#: how quiet the run was): the gate reports their changes as the machine's, apart from the code's,
#: and never fails on them.
MACHINE_FIGURES = ("ceilings.", "crossover.", "conditions.")

#: Benchmark versions whose figure is not the quantity the benchmark records now, with what it was.
#: asv's version is a hash of a benchmark's code: it changes with edits that keep the quantity (the
#: figure is then compared, flagged as from another version) and, where a change of method changes
#: what the figure means, a recorded version goes here. Versions with the same text mean the same
#: thing; an unlisted version means what the benchmark measures now. Keys are the first 16 hex digits.
#: A change of meaning that leaves benchmarks/ as it is keeps the version and cannot be told apart
#: (10cacf9 made the DRAM roof a read, DecodeRooflineFraction's denominator, at version c5e57412):
#: such a change must change its benchmark's code too (docs/compare.md).
_best_pass = "the best of its passes (before cb20725), not their median"
_cold_call = "one cold call per sample, setup re-run before each (before 92e251c), not steps back to back"
RETIRED_MEANINGS: dict[str, dict[str, str]] = {
    BANDWIDTH_CEILING: {"d889f2edf1e7f750": _best_pass},
    PEAK_CEILING: {"78a9683551bd8412": _best_pass},
    "decode.DecodeDRAM.time_decode_step": {"404debb31a767150": _cold_call, "4c93eb4f8347213a": _cold_call},
    "decode.DecodeCacheResident.time_decode_step": {"404debb31a767150": _cold_call, "4c93eb4f8347213a": _cold_call},
    "backends.BackendDecode.time_decode_step": {"8a171028484fd97a": _cold_call, "119f66cb6bca6dc2": _cold_call},
    "decode.DecodeRooflineFraction.track_roofline_fraction": {
        "6d1aeadf792196b5": "a fraction of the best pass of STREAM add, not of the median of a read (10cacf9)"
    },
    PREDICTED_CROSSOVER: {"13cabd4be51328e4": "from the ceilings' best passes with STREAM add as the DRAM roof"},
}
