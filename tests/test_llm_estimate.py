"""The decode-step roofline: published worked figures, hand-derived cases, and properties."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.errors import BadInput
from roofline.model.arithmetic import crossover_batch
from roofline.model.hardware import Hardware
from roofline.model.llm import PRESETS, ModelShape
from roofline.model.llm_estimate import (
    INTERCONNECTS,
    DecodeSetup,
    batching,
    compute_dtype_for,
    estimate,
    lookup_interconnect,
    max_batch_that_fits,
    request,
    require_fits,
    step,
)

# Built here, not looked up, so these tests do not depend on the hardware catalogue.
TPU_V5E = Hardware("TPU v5e", {"bf16": 197e12, "int8": 394e12}, 8.19e11, memory_bytes=16e9)
H100 = Hardware("H100 SXM", {"bf16": 990e12, "fp8": 1979e12}, 3.35e12, memory_bytes=80e9)
H100_BOOK = Hardware("H100 (scaling book)", {"bf16": 1e15}, 3.35e12, memory_bytes=80e9)
LLAMA_8B, LLAMA_70B, MIXTRAL = PRESETS["llama-3-8b"], PRESETS["llama-3-70b"], PRESETS["mixtral-8x7b"]


# ---- published worked figures -------------------------------------------------------------------


def test_scaling_book_critical_batch_tpu_v5e():
    # "How to Scale Your Model": 1.97e14 / 8.2e11 ≈ 240 for bf16 weights and bf16 FLOPs.
    crossover = batching(DecodeSetup(LLAMA_70B, TPU_V5E)).crossover
    assert crossover == pytest.approx(240, rel=0.01)
    assert crossover == pytest.approx(crossover_batch(TPU_V5E, 2, "bf16"), rel=1e-4)


def test_scaling_book_int8_weights_with_bf16_arithmetic_halve_it():
    bf16 = batching(DecodeSetup(LLAMA_70B, TPU_V5E)).crossover
    int8 = batching(DecodeSetup(LLAMA_70B, TPU_V5E, dtype="int8")).crossover
    assert int8 == pytest.approx(bf16 / 2, rel=1e-9)
    assert int8 == pytest.approx(120, rel=0.01)
    # int8 weights and int8 arithmetic (twice the FLOP/s) bring it back.
    both = batching(DecodeSetup(LLAMA_70B, TPU_V5E, dtype="int8", compute_dtype="int8")).crossover
    assert both == pytest.approx(bf16, rel=1e-9)


def test_scaling_book_critical_batch_h100():
    # 1e15 / 3.35e12 ≈ 298.5.
    assert batching(DecodeSetup(LLAMA_70B, H100_BOOK)).crossover == pytest.approx(298.5, rel=0.005)


def test_llama_3_70b_bf16_weights_are_two_bytes_per_parameter():
    setup = DecodeSetup(LLAMA_70B, H100, dtype="bf16")
    assert setup.weight_bytes_stored == 2 * LLAMA_70B.params_total == 141_107_412_992
    assert DecodeSetup(LLAMA_70B, H100, tp=2).weight_bytes_stored == LLAMA_70B.params_total


def test_llama_3_8b_kv_cache_per_sequence_by_hand():
    # 2 · 32 layers · 8 KV heads · 128 dims · 2 B = 131,072 B per token; × 4096 tokens = 512 MiB.
    setup = DecodeSetup(LLAMA_8B, H100, context=4096)
    assert setup.kv_bytes_per_token == 131_072
    assert setup.kv_bytes_per_sequence == 131_072 * 4096 == 512 * 2**20


def test_llama_3_70b_on_two_h100_at_batch_1_is_weight_bound_near_21_ms():
    # 140 GB / (2 × 3.35 TB/s) ≈ 20.9 ms per token.
    s = step(DecodeSetup(LLAMA_70B, H100, tp=2, context=4096), 1)
    assert s.bound == "bandwidth"
    assert s.step_s == pytest.approx(140e9 / (2 * 3.35e12), rel=0.02)
    assert s.step_s == pytest.approx(0.021, rel=0.03)
    assert s.weight_share > 0.98


# ---- hand-derived cases ---------------------------------------------------------------------------


def test_step_time_by_hand():
    # A tiny dense model: every byte and FLOP counted by hand.
    m = ModelShape("tiny", layers=1, hidden=8, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    hw = Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1e6)
    setup = DecodeSetup(m, hw, context=5)
    # Read: attention 8·4·2·(2+1) = 192, MLP 3·8·16 = 384, norms 16, head 80, final norm 8 → 680 params, 1360 B.
    assert setup.weight_bytes_read(1) == 1360
    # KV: 2 · 1 · 1 · 4 · 2 B = 16 B per token, × 5 = 80 B per sequence.
    assert setup.kv_bytes_per_sequence == 80
    # FLOPs per token: 2 · (192 + 384 + 80) matmul + 4 · 1 · 2 · 4 · 5 attention = 1312 + 160 = 1472.
    assert setup.flops_per_sequence == 1472
    s = step(setup, 3)
    assert s.memory_s == pytest.approx((1360 + 3 * 80) / 100)
    assert s.compute_s == pytest.approx(3 * 1472 / 1000)
    assert s.step_s == pytest.approx(16.0) and s.bound == "bandwidth"
    assert s.tokens_per_s == pytest.approx(3 / 16) and s.tokens_per_s_per_sequence == pytest.approx(1 / 16)
    assert s.weight_share == pytest.approx(1360 / 1600) and s.kv_share == pytest.approx(240 / 1600)


def test_saturation_falls_as_context_grows_and_the_compute_turn_rises():
    knees, turns = [], []
    for context in (1, 512, 2048, 8192, 32768):
        c = batching(DecodeSetup(LLAMA_70B, H100, tp=2, context=context))
        knees.append(c.saturation)
        turns.append(c.compute_bound_from)
        assert c.saturation <= c.crossover
    assert knees == sorted(knees, reverse=True) and knees[0] > 2 * knees[-1]
    assert turns[0] == pytest.approx(296, rel=0.01)
    assert turns[-1] is None  # at 32k tokens every sequence's KV read outweighs its arithmetic


def test_knee_is_kv_balance_when_kv_limits():
    c = batching(DecodeSetup(LLAMA_70B, H100, tp=2, context=4096))
    assert c.limited_by == "kv" and c.compute_bound_from is None
    assert c.saturation == pytest.approx(c.kv_equals_weights)
    # 139.0 GB of weights read / 1.342 GB of KV per sequence.
    assert c.saturation == pytest.approx(LLAMA_70B.params_read(1) * 2 / (327_680 * 4096), rel=1e-12)
    assert c.ceiling_tokens_per_s == pytest.approx(2 * 3.35e12 / (327_680 * 4096))


def test_step_bound_agrees_with_compute_bound_from():
    setup = DecodeSetup(LLAMA_8B, H100, context=128)
    turn = batching(setup).compute_bound_from
    assert turn is not None
    assert step(setup, math.floor(turn)).bound == "bandwidth"
    assert step(setup, math.ceil(turn)).bound == "compute"


def test_moe_reads_the_experts_its_batch_touches():
    setup = DecodeSetup(MIXTRAL, H100, tp=2, context=1)
    assert setup.experts_touched(1) == pytest.approx(2)
    assert setup.experts_touched(8) == pytest.approx(8 * (1 - 0.75**8))
    assert setup.experts_touched(10_000) == pytest.approx(8)
    active, total = setup.weight_bytes_read(1), setup.weight_bytes_read(10_000)
    assert active == pytest.approx((MIXTRAL.params_active - MIXTRAL.embedding_params) * 2 / 2)
    assert total == pytest.approx((MIXTRAL.params_total - MIXTRAL.embedding_params) * 2 / 2)
    # FLOPs follow the active experts only, so the crossover sits near E/k = 4× a dense model's.
    c = batching(setup)
    assert 3.5 * 296 < c.crossover < 4 * 296


def test_int4_reads_fewer_bytes_than_int8_and_bf16():
    times = [step(DecodeSetup(LLAMA_8B, H100, dtype=d, context=1), 1).step_s for d in ("bf16", "int8", "int4")]
    assert times[0] > times[1] > times[2]
    assert times[1] / times[2] == pytest.approx(1 / 0.515625, rel=0.01)


def test_all_reduce_time_by_hand():
    setup = DecodeSetup(LLAMA_70B, H100, tp=2, context=1, interconnect=450e9)
    s = step(setup, 8)
    # 2 all-reduces per layer × 80 layers, each of 8 · 8192 bf16 activations; a ring sends 2·(tp−1)/tp of it.
    assert setup.comm_bytes(8) == 2 * 80 * (2 * 1 / 2) * 8 * 8192 * 2
    assert s.comm_s == pytest.approx(setup.comm_bytes(8) / 450e9)
    assert s.step_s == pytest.approx(max(s.memory_s, s.compute_s) + s.comm_s)
    assert step(DecodeSetup(LLAMA_70B, H100, tp=2, interconnect=1e6), 8).bound == "interconnect"
    assert DecodeSetup(LLAMA_70B, H100, tp=1, interconnect=1e6).comm_bytes(8) == 0


def test_ring_all_reduce_bytes_by_hand_at_tp_4_and_8():
    # Llama-3-70B, batch 16, bf16 activations: one all-reduce is 16 · 8192 · 2 = 262,144 B; a ring sends
    # 2 · (tp − 1)/tp of it per device (1.5× at tp 4, 1.75× at tp 8); 2 per layer × 80 layers = 160.
    assert DecodeSetup(LLAMA_70B, H100, tp=4).comm_bytes(16) == 160 * 1.5 * 262_144 == 62_914_560
    assert DecodeSetup(LLAMA_70B, H100, tp=8).comm_bytes(16) == 160 * 1.75 * 262_144 == 73_400_320


def test_fp32_activations_are_four_bytes():
    # fp32 weights compute in fp32, so activations travel as 4 B: 160 · (2 · 1/2) · 8192 · 4 at batch 1, tp 2.
    hw = Hardware("fp32 box", {"fp32": 1e14, "bf16": 1e15}, 1e12, memory_bytes=1e12)
    assert DecodeSetup(LLAMA_70B, hw, dtype="fp32", tp=2).comm_bytes(1) == 160 * 8192 * 4 == 5_242_880
    assert DecodeSetup(LLAMA_70B, hw, dtype="bf16", tp=2).comm_bytes(1) == 160 * 8192 * 2


def test_all_reduce_latency_by_hand():
    # Llama-3-70B on 8 devices at batch 1: 160 all-reduces × 8 µs = 1.28 ms, plus 160 · 1.75 · 16,384 B / 450 GB/s.
    setup = DecodeSetup(LLAMA_70B, H100, tp=8, context=1, interconnect=450e9, allreduce_latency=8e-6)
    assert setup.allreduces == 160
    assert setup.comm_s(1) == pytest.approx(160 * 8e-6 + 160 * 1.75 * 16_384 / 450e9, rel=1e-12)
    s = step(setup, 1)
    assert s.step_s == pytest.approx(sum(p.time_s for p in s.phases) + 160 * 8e-6 + 160 * 1.75 * 16_384 / 450e9)
    assert s.whole_step_s == pytest.approx(max(s.memory_s, s.compute_s) + 1.28e-3 + 160 * 1.75 * 16_384 / 450e9)
    # Latency alone (no bandwidth), and none at tp 1.
    assert DecodeSetup(LLAMA_70B, H100, tp=8, allreduce_latency=8e-6).comm_s(1) == pytest.approx(1.28e-3)
    assert DecodeSetup(LLAMA_70B, H100, tp=1, allreduce_latency=8e-6, interconnect=1e9).comm_s(64) == 0
    assert any("no all-reduce" in n for n in DecodeSetup(LLAMA_8B, H100, allreduce_latency=8e-6).notes)


def test_named_interconnects_carry_a_source():
    assert lookup_interconnect("NVLink-4") is INTERCONNECTS["nvlink4"]
    assert INTERCONNECTS["nvlink4"].bandwidth == 450e9 and INTERCONNECTS["nvlink4"].latency == 3.7e-6
    assert "https://github.com/sgl-project/sglang/pull/2904" in INTERCONNECTS["nvlink4"].source
    assert "https://" in INTERCONNECTS["pcie4"].source
    assert all(len(i.source) > 40 for i in INTERCONNECTS.values())
    with pytest.raises(BadInput, match="unknown interconnect 'ib'"):
        lookup_interconnect("ib")


def test_per_phase_bound_by_hand():
    # The tiny model at batch 100: projections, MLP and head turn compute-bound, attention stays on its KV read.
    m = ModelShape("tiny", layers=1, hidden=8, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    hw = Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1e6)
    s = step(DecodeSetup(m, hw, context=5), 100)
    by_name = {p.name: p for p in s.phases}
    # q/k/v/o 192 + input norm 8 = 200 params = 400 B (4 s); 100 · 2 · 192 = 38,400 FLOPs (38.4 s).
    assert (by_name["qkv_o"].bytes, by_name["qkv_o"].flops) == (400, 38_400)
    # KV: 100 · 80 B = 8000 B (80 s); 100 · 4 · 2 · 4 · 5 = 16,000 FLOPs (16 s).
    assert (by_name["attention"].bytes, by_name["attention"].flops) == (8000, 16_000)
    # MLP 384 + norm 8 = 392 params = 784 B; 100 · 2 · 384 = 76,800 FLOPs. Head 80 + final norm 8 = 176 B; 16,000.
    assert (by_name["mlp"].bytes, by_name["mlp"].flops) == (784, 76_800)
    assert (by_name["head"].bytes, by_name["head"].flops) == (176, 16_000)
    assert [p.bound for p in s.phases] == ["compute", "bandwidth", "compute", "compute"]
    assert s.step_s == pytest.approx(38.4 + 80 + 76.8 + 16)  # 211.2 s
    # The whole step: 9360 B (93.6 s) against 147,200 FLOPs (147.2 s).
    assert s.whole_step_s == pytest.approx(147.2) and s.bound == "compute"
    assert s.binding_phase.name == "attention"
    assert s.memory_s == pytest.approx(93.6) and s.compute_s == pytest.approx(147.2)


def test_phase_flops_split_over_tensor_parallel_devices_by_hand():
    # Llama-3-70B on 8 devices, batch 64: q/k/v/o 80 · 8192 · 128 · 2 · 72 = 12,079,595,520 weights, MLP
    # 80 · 3 · 8192 · 28,672 = 56,371,445,760, head 128,256 · 8192 = 1,050,673,152; 2 FLOPs each per token, ÷ 8.
    s = step(DecodeSetup(LLAMA_70B, H100, tp=8, context=1), 64)
    flops = {p.name: p.flops for p in s.phases}
    assert flops["qkv_o"] == 64 * 2 * 12_079_595_520 / 8 == 193_273_528_320
    assert flops["mlp"] == 64 * 2 * 56_371_445_760 / 8 == 901_943_132_160
    assert flops["head"] == 64 * 2 * 1_050_673_152 / 8 == 16_810_770_432
    # Attention over one token of context: 64 · 4 · 80 layers · 64 heads · 128 dims / 8; its KV, 64 · 327,680 B / 8.
    assert flops["attention"] == 64 * 4 * 80 * 64 * 128 / 8 == 20_971_520
    assert s.phases[1].bytes == 64 * 327_680 / 8
    # Weight bytes split the same way: bf16, ÷ 8, the norms with their phases.
    nbytes = {p.name: p.bytes for p in s.phases}
    assert nbytes["qkv_o"] == (12_079_595_520 + 80 * 8192) * 2 / 8
    assert nbytes["head"] == (1_050_673_152 + 8192) * 2 / 8


def test_a_phase_on_the_ridge_counts_as_compute_bound():
    # The tiny model's head at batch 11: 176 B / 100 B/s = 1.76 s = 11 · 160 FLOPs / 1000 FLOP/s.
    m = ModelShape("tiny", layers=1, hidden=8, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    hw = Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1e6)
    head = step(DecodeSetup(m, hw, context=5), 11).phases[-1]
    assert head.name == "head" and head.memory_s == head.compute_s == 1.76
    assert head.bound == "compute"


def test_request_by_hand():
    m = ModelShape("tiny", layers=1, hidden=8, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    hw = Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1e6)
    setup = DecodeSetup(m, hw, context=3 + 4)
    r = request(setup, batch=2, prompt=3, output=4)
    # Prefill of 6 tokens: q/k/v/o 400 B (4 s) vs 6 · 384 FLOPs; KV written 6 · 16 B (0.96 s) vs causal
    # pairs 2 · (1 + 2 + 3) · 32 = 384 FLOPs; MLP 784 B (7.84 s); head 176 B (1.76 s) for the last token only.
    assert [p.bytes for p in r.prefill] == [400, 96, 784, 176]
    assert [p.flops for p in r.prefill] == [6 * 384, 384, 6 * 768, 2 * 160]
    assert r.ttft_s == pytest.approx(4 + 0.96 + 7.84 + 1.76)
    # 3 decode steps at contexts 4, 5, 6: the mean reads 5 KV entries: 4 + 2 · 16 · 5 / 100 + 7.84 + 1.76 s.
    assert r.decode_steps == 3
    assert r.step_mean_s == pytest.approx(4 + 1.6 + 7.84 + 1.76)
    assert r.e2e_s == pytest.approx(14.56 + 3 * 15.2)
    assert r.tokens_per_s == pytest.approx(2 * 4 / r.e2e_s)
    assert r.decode_tokens_per_s == pytest.approx(1 / 15.2)
    one = request(setup, batch=2, prompt=3, output=1)
    assert one.step_mean_s is None and one.e2e_s == one.ttft_s and one.decode_tokens_per_s is None


def test_prefill_over_eight_devices_by_hand():
    # Llama-3-70B, 2 prompts of 128 tokens on 8 devices with 4 µs all-reduces at 450 GB/s:
    setup = DecodeSetup(LLAMA_70B, H100, tp=8, context=129, interconnect=450e9, allreduce_latency=4e-6)
    r = request(setup, batch=2, prompt=128, output=1)
    attention = r.prefill[1]
    # the prompts' KV written once, 256 tokens · 327,680 B ÷ 8; causal pairs 2 · (128 · 129 / 2) = 16,512,
    # 4 FLOPs per pair per head dim per head per layer: 16,512 · 4 · 80 · 64 · 128 ÷ 8.
    assert attention.bytes == 256 * 327_680 / 8 == 10_485_760
    assert attention.flops == 16_512 * 4 * 80 * 64 * 128 / 8 == 5_410_652_160
    # the head multiplies only the last token of each prompt: 2 · 2 · 1,050,673,152 ÷ 8.
    assert r.prefill[3].flops == 2 * 2 * 1_050_673_152 / 8
    # 160 all-reduces of 256 tokens · 8192 · 2 B, 1.75 × that sent by each device.
    comm = 160 * 4e-6 + 160 * 1.75 * 256 * 8192 * 2 / 450e9
    assert r.prefill_comm_s == pytest.approx(comm, rel=1e-12)
    assert r.ttft_s == pytest.approx(sum(p.time_s for p in r.prefill) + comm, rel=1e-12)
    assert r.e2e_s == r.ttft_s and r.tokens_per_s == pytest.approx(2 / r.ttft_s)


def test_mean_decode_step_equals_the_steps_it_averages():
    # Every phase is linear in the KV entries read, so the mean step at the mean context is exact.
    setup = DecodeSetup(PRESETS["mistral-7b"], H100, context=4200)
    r = request(setup, 64, 4090, 11)
    steps = [step(DecodeSetup(setup.model, H100, context=c), 64).step_s for c in range(4091, 4101)]
    assert r.step_mean_s == pytest.approx(sum(steps) / len(steps), rel=1e-12)


def test_moe_bisection_reaches_the_all_experts_end():
    # A roof so high that the crossover batch is ~10^5: every expert is touched ((3/4)^b ≈ 0), so the root is
    # the all-experts weight bytes over a sequence's bytes at the ridge. Hand figures for Mixtral-8x7B:
    # weights read with all experts: (46,702,792,704 − 32,000 · 4096 embedding) · 2 B = 93,143,441,408 B;
    # matmul weights per token: 32 · (41,943,040 + 2 · 176,160,768 + 32,768) + 32,000 · 4096 = 12,748,587,008.
    hw = Hardware("very fast", {"bf16": 1e17}, 3.35e12, memory_bytes=1e15)
    setup = DecodeSetup(MIXTRAL, hw, context=1)
    assert setup.weight_bytes_read(math.inf) == 93_143_441_408
    assert MIXTRAL.matmul_params_per_token == 12_748_587_008
    per_sequence = 2 * 12_748_587_008 / (1e17 / 3.35e12)
    assert batching(setup).crossover == pytest.approx(93_143_441_408 / per_sequence, rel=1e-9)


def test_moe_batching_batches_are_roots():
    setup = DecodeSetup(MIXTRAL, H100, tp=2, context=1)
    b = batching(setup).crossover
    per_sequence = 2 * MIXTRAL.matmul_params_per_token / 2 / (990e12 / 3.35e12)
    assert setup.weight_bytes_read(b) == pytest.approx(b * per_sequence, rel=1e-9)
    # At 128k tokens of context a sequence's KV (8.6 GB per device) outweighs most experts: the root is
    # in the middle of the bisection's range, where only some experts are touched.
    long = DecodeSetup(MIXTRAL, H100, tp=2, context=131_072)
    b = batching(long).kv_equals_weights
    assert long.weight_bytes_read(b) == pytest.approx(b * long.kv_bytes_per_sequence, rel=1e-9)
    assert 3 < long.experts_touched(b) < 7


def test_reserved_memory_narrows_the_fit():
    # 80 GiB less the 361 MiB the driver keeps = 81,559 MiB per device: Llama-3-70B on two holds
    # (85,520,809,984 − 70,553,706,496) / 671,088,640 = 22.3 sequences of 4096 tokens.
    h100 = Hardware("H100", {"bf16": 990e12}, 3.35e12, memory_bytes=80 * 2**30, memory_reserved=361 * 2**20)
    setup = DecodeSetup(LLAMA_70B, h100, tp=2, context=4096)
    assert setup.memory_capacity == 81_559 * 2**20 == 85_520_809_984
    assert max_batch_that_fits(setup) == 22
    # A runtime reserve of 2 GB on top: (85,520,809,984 − 2e9 − 70,553,706,496) / 671,088,640 = 19.3.
    assert max_batch_that_fits(DecodeSetup(LLAMA_70B, h100, tp=2, context=4096, reserve=2e9)) == 19
    with pytest.raises(BadInput, match="memory reserve 85.9 GB leaves nothing"):
        DecodeSetup(LLAMA_70B, h100, reserve=80 * 2**30 - 361 * 2**20)


def test_interconnect_binds_only_past_both_roofs():
    # Llama-3-70B on two H100s at batch 8: memory ≈ 21 ms, compute ≈ 1.1 ms. All-reduces between the two
    # (160 × 20 µs = 3.2 ms) leave the step bandwidth-bound; beyond both (160 × 200 µs = 32 ms) it is the link.
    between = step(DecodeSetup(LLAMA_70B, H100, tp=2, context=1, allreduce_latency=20e-6), 8)
    assert between.compute_s < between.comm_s < between.memory_s
    assert between.bound == "bandwidth"
    beyond = step(DecodeSetup(LLAMA_70B, H100, tp=2, context=1, allreduce_latency=200e-6), 8)
    assert beyond.comm_s > beyond.memory_s and beyond.bound == "interconnect"


def test_a_batch_that_exactly_fills_memory_fits():
    # The tiny model stores 760 params (1520 B) and 80 B of KV per sequence at context 5: 1760 B hold batch 3.
    m = ModelShape("tiny", layers=1, hidden=8, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    setup = DecodeSetup(m, Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1760.0), context=5)
    assert setup.memory_needed(3) == 1760
    assert step(setup, 3).fits and not step(setup, 4).fits and max_batch_that_fits(setup) == 3
    assert request(setup, 3, 2, 3).fits
    # Room for exactly one sequence's KV beside the weights: batch 1 fits.
    one = DecodeSetup(m, Hardware("toy", {"bf16": 1000.0}, 100.0, memory_bytes=1600.0), context=5)
    assert max_batch_that_fits(one) == 1 and step(one, 1).fits


def test_tp_without_interconnect_says_communication_is_not_counted():
    assert any("all-reduce" in n for n in DecodeSetup(LLAMA_70B, H100, tp=2).notes)
    assert not DecodeSetup(LLAMA_8B, H100).notes


# ---- which peak ---------------------------------------------------------------------------------


def test_compute_dtype_rule():
    assert compute_dtype_for(H100, "bf16") == ("bf16", None)
    assert compute_dtype_for(H100, "int4") == ("bf16", None)  # weight-only quantization
    assert compute_dtype_for(H100, "int8") == ("bf16", None)
    assert compute_dtype_for(H100, "fp8") == ("fp8", None)
    dtype, note = compute_dtype_for(TPU_V5E, "fp8")
    assert dtype == "bf16" and "no fp8 peak" in note
    local = Hardware("host", {"fp32": 1e11, "fp64": 5e10}, 2e10)
    dtype, note = compute_dtype_for(local, "bf16")
    assert dtype == "fp32" and "no bf16 peak: the fp32 roof" in note
    assert compute_dtype_for(TPU_V5E, "int8", requested="int8") == ("int8", None)
    with pytest.raises(BadInput, match="no peak for dtype 'fp8'"):
        compute_dtype_for(TPU_V5E, "bf16", requested="fp8")
    with pytest.raises(
        BadInput, match=r"odd has none of the peaks bf16, fp16, fp32 \(known: int8\); give a compute dtype"
    ):
        compute_dtype_for(Hardware("odd", {"int8": 1e12}, 1e9), "bf16")


def test_fp8_weights_use_the_fp8_peak():
    bf16 = batching(DecodeSetup(LLAMA_8B, H100, dtype="bf16")).crossover
    fp8 = batching(DecodeSetup(LLAMA_8B, H100, dtype="fp8")).crossover
    assert fp8 == pytest.approx(bf16 * (1979 / 990) / 2, rel=1e-9)


# ---- memory ---------------------------------------------------------------------------------------


def test_largest_batch_that_fits_by_hand():
    setup = DecodeSetup(LLAMA_70B, H100, tp=2, context=4096)
    # (80e9 − 70,553,706,496) / (327,680 · 4096 / 2) = 9,446,293,504 / 671,088,640 = 14.07
    assert max_batch_that_fits(setup) == 14
    assert step(setup, 14).fits and not step(setup, 15).fits
    require_fits(setup, [1, 8, 14])
    with pytest.raises(BadInput, match=r"batches 64, 512 do not fit .* the largest batch that fits is 14$"):
        require_fits(setup, [1, 8, 64, 512])


def test_weights_that_do_not_fit():
    setup = DecodeSetup(LLAMA_70B, H100, tp=1)
    assert max_batch_that_fits(setup) == 0
    with pytest.raises(BadInput, match="weights need 141 GB per device .* so no batch fits"):
        require_fits(setup, [1])


def test_unknown_memory_is_not_checked():
    hw = Hardware("no memory size", {"bf16": 1e12}, 1e11)
    setup = DecodeSetup(LLAMA_70B, hw)
    assert max_batch_that_fits(setup) is None and step(setup, 1).fits is None
    require_fits(setup, [10**6])


# ---- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(tp=3), "tensor parallel degree 3 does not divide Llama-3-8B's 8 KV heads"),
        (dict(tp=16), "degree 16 does not divide"),
        (dict(tp=0), "tensor parallel degree must be a positive integer"),
        (dict(context=0), "context must be a positive integer"),
        (dict(context=-4), "context must be a positive integer"),
        (dict(dtype="int2"), "unknown weight dtype"),
        (dict(kv_dtype="int4"), "unknown KV-cache dtype"),
        (dict(interconnect=0.0), "interconnect bandwidth must be positive"),
        (dict(interconnect=math.inf), "interconnect bandwidth must be positive"),
        (dict(allreduce_latency=-1e-6), "all-reduce latency must be finite and ≥ 0"),
        (dict(allreduce_latency=math.nan), "all-reduce latency"),
        (dict(reserve=math.inf), "memory reserve must be finite"),
        (dict(reserve=True), "memory reserve"),
        (dict(dtype="gptq", group_size=0), "gptq group size"),
    ],
)
def test_bad_setups_are_bad_input(kwargs, match):
    with pytest.raises(BadInput, match=match):
        DecodeSetup(LLAMA_8B, H100, **kwargs)


@pytest.mark.parametrize("batch", [0, -1, 1.5, True])
def test_bad_batch_is_bad_input(batch):
    with pytest.raises(BadInput, match="batch must be a positive integer"):
        step(DecodeSetup(LLAMA_8B, H100), batch)


@pytest.mark.parametrize(
    "kwargs, match", [(dict(prompt=0), "prompt"), (dict(output=-1), "output"), (dict(batch=0), "batch")]
)
def test_bad_requests_are_bad_input(kwargs, match):
    args = {"batch": 1, "prompt": 8, "output": 8, **kwargs}
    with pytest.raises(BadInput, match=f"{match} must be a positive integer"):
        request(DecodeSetup(LLAMA_8B, H100), **args)


def test_estimate_needs_prompt_and_output_together():
    with pytest.raises(BadInput, match="prompt and output go together"):
        estimate(DecodeSetup(LLAMA_8B, H100), [1], prompt=8)


def test_estimate_needs_batches():
    with pytest.raises(BadInput, match="no batch sizes"):
        estimate(DecodeSetup(LLAMA_8B, H100), [])


# ---- properties -----------------------------------------------------------------------------------


@st.composite
def setups(draw, context=None):
    kv_heads = draw(st.integers(1, 8))
    heads = kv_heads * draw(st.integers(1, 4))
    experts = draw(st.sampled_from([1, 1, 2, 4, 8]))
    model = ModelShape(
        name="drawn",
        layers=draw(st.integers(1, 8)),
        hidden=draw(st.integers(16, 4096)),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=draw(st.sampled_from([16, 64, 128])),
        intermediate=draw(st.integers(1, 8192)),
        vocab=draw(st.integers(1, 100_000)),
        experts=experts,
        experts_per_token=draw(st.integers(1, experts)),
        sliding_window=draw(st.one_of(st.none(), st.integers(1, 8192))),
        tied_embeddings=draw(st.booleans()),
    )
    hw = Hardware(
        "drawn",
        {"bf16": draw(st.floats(1e11, 1e16)), "int8": draw(st.floats(1e11, 1e16))},
        draw(st.floats(1e9, 1e13)),
        memory_bytes=draw(st.floats(1e8, 1e12)),
    )
    return DecodeSetup(
        model,
        hw,
        dtype=draw(st.sampled_from(["fp32", "bf16", "fp8", "int8", "int4"])),
        kv_dtype=draw(st.sampled_from(["bf16", "fp8"])),
        context=context if context is not None else draw(st.integers(1, 100_000)),
        tp=draw(st.sampled_from([t for t in (1, 2, 4, 8) if kv_heads % t == 0])),
        compute_dtype="bf16",
    )


def _with_context(setup, context):
    s = setup
    return DecodeSetup(s.model, s.hardware, s.dtype, s.kv_dtype, context, s.tp, s.compute_dtype, s.interconnect)


TOL = 1 + 1e-9


@settings(max_examples=150, deadline=None)
@given(setups(), st.integers(1, 5000), st.integers(1, 5000))
def test_step_time_is_non_decreasing_in_batch_and_tokens_per_s_too(setup, b1, b2):
    lo, hi = sorted((b1, b2))
    a, b = step(setup, lo), step(setup, hi)
    assert a.step_s <= b.step_s * TOL
    assert a.tokens_per_s <= b.tokens_per_s * TOL


@settings(max_examples=150, deadline=None)
@given(setups(context=1), st.integers(1, 100_000), st.integers(1, 100_000), st.integers(1, 2000))
def test_step_time_is_non_decreasing_in_context(setup, c1, c2, batch):
    lo, hi = sorted((c1, c2))
    assert step(_with_context(setup, lo), batch).step_s <= step(_with_context(setup, hi), batch).step_s * TOL


@settings(max_examples=150, deadline=None)
@given(setups(context=1), st.integers(1, 100_000), st.integers(1, 100_000))
def test_saturation_is_at_most_the_crossover_and_falls_with_context(setup, c1, c2):
    lo, hi = sorted((c1, c2))
    near, far = batching(_with_context(setup, lo)), batching(_with_context(setup, hi))
    assert near.saturation <= near.crossover * TOL
    assert far.saturation <= near.saturation * TOL
    if near.compute_bound_from is not None:
        assert near.compute_bound_from >= near.saturation / TOL
    # Attention's own intensity: 4·heads·head_dim FLOPs per 2·kv_heads·head_dim·bytes KV bytes.
    m = setup.model
    attention = 2 * m.heads / (m.kv_heads * setup.bytes_per_kv)
    if attention < setup.peak / setup.hardware.bandwidth and near.compute_bound_from is None:
        assert far.compute_bound_from is None  # below the ridge, more context only delays the turn
    elif attention < setup.peak / setup.hardware.bandwidth and far.compute_bound_from is not None:
        assert far.compute_bound_from >= near.compute_bound_from / TOL


@settings(max_examples=150, deadline=None)
@given(setups())
def test_the_turn_to_compute_bound_matches_the_step(setup):
    turn = batching(setup).compute_bound_from
    if turn is None:
        assert step(setup, 10**7).bound == "bandwidth"
    else:
        if math.floor(turn * 0.999) >= 1:
            assert step(setup, math.floor(turn * 0.999)).bound == "bandwidth"
        assert step(setup, math.ceil(turn * 1.001)).bound == "compute"


@settings(max_examples=150, deadline=None)
@given(setups())
def test_batching_batches_are_roots(setup):
    """Each batch Batching names is where the weights read equal batch × a sequence's bytes."""
    c, kv = batching(setup), setup.kv_bytes_per_sequence
    no_attention = 2 * setup.model.matmul_params_per_token / setup.tp / (setup.peak / setup.hardware.bandwidth)
    for batch, per_sequence in ((c.kv_equals_weights, kv), (c.crossover, no_attention)):
        assert setup.weight_bytes_read(batch) == pytest.approx(batch * per_sequence, rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(setups(), st.integers(1, 5000))
def test_phase_sum_is_never_shorter_than_the_whole_step(setup, batch):
    s = step(setup, batch)
    assert s.step_s >= s.whole_step_s / TOL
    assert s.step_s <= s.whole_step_s * len(s.phases) * TOL  # each phase's max ≤ the whole step's max
    assert sum(p.bytes for p in s.phases) == pytest.approx(s.weight_bytes + s.kv_bytes, rel=1e-12)
    assert s.flops == pytest.approx(batch * setup.flops_per_sequence, rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(setups(context=1), st.integers(1, 64), st.integers(1, 3000), st.integers(1, 40))
def test_request_mean_step_is_the_mean_of_its_steps(setup, batch, prompt, output):
    s = setup
    context = prompt + output
    grown = DecodeSetup(s.model, s.hardware, s.dtype, s.kv_dtype, context, s.tp, s.compute_dtype, s.interconnect)
    r = request(grown, batch, prompt, output)
    steps = [step(_with_context(grown, c), batch).step_s for c in range(prompt + 1, prompt + output)]
    if steps:
        assert r.step_mean_s == pytest.approx(sum(steps) / len(steps), rel=1e-9)
    assert r.e2e_s == pytest.approx(r.ttft_s + sum(steps), rel=1e-9)
    assert r.ttft_s > 0


@settings(max_examples=150, deadline=None)
@given(setups())
def test_largest_batch_that_fits_is_the_largest(setup):
    n = max_batch_that_fits(setup)
    capacity = setup.memory_capacity
    if n > 0:
        assert setup.memory_needed(n) <= capacity
    assert setup.memory_needed(n + 1) > capacity
