"""Model shapes: parameter counts against the publishers' totals, KV bytes by hand, lookups."""

import pytest

from roofline.errors import BadInput
from roofline.model.llm import (
    PRESETS,
    QUANT_FORMATS,
    ModelShape,
    bytes_per_kv_element,
    bytes_per_weight,
    custom_model,
    lookup_model,
    natural_compute,
    preset_names,
    uses_group_size,
    weight_formats,
)
from roofline.outcome import Skipped

# Totals as the publishers' checkpoints count them: Hugging Face's `safetensors.total` for each repository
# (the "Model size" its page shows).
PUBLISHED_TOTAL = {
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.2-3b": 3_212_749_824,
    "llama-2-7b": 6_738_417_664,
    "llama-2-13b": 13_015_866_880,
    "llama-2-70b": 68_976_653_312,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "mistral-7b-v0.3": 7_248_023_552,
    "mixtral-8x22b": 140_630_071_296,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-14b": 14_770_033_664,
    "qwen2.5-32b": 32_763_876_352,
    "qwen2.5-72b": 72_706_203_648,
}


def test_every_preset_has_a_published_total():
    assert set(PUBLISHED_TOTAL) == set(PRESETS)


# The Llama-2 checkpoints also store each layer's rotary `inv_freq` buffer (head_dim / 2 = 64 floats), which is
# not a parameter: 32 · 64 = 2,048 for 7B, 40 · 64 = 2,560 for 13B, 80 · 64 = 5,120 for 70B.
STORED_BUFFERS = {"llama-2-7b": 2_048, "llama-2-13b": 2_560, "llama-2-70b": 5_120}


@pytest.mark.parametrize("key", PUBLISHED_TOTAL)
def test_parameter_count_matches_the_published_total(key):
    m = PRESETS[key]
    buffers = STORED_BUFFERS.get(key, 0)
    assert buffers == (m.layers * m.head_dim // 2 if key in STORED_BUFFERS else 0)
    assert m.params_total == PUBLISHED_TOTAL[key] - buffers


def test_rounded_totals_as_the_issue_quotes_them():
    got = {
        k: round(PRESETS[k].params_total / 1e9, 2) for k in ("llama-3-8b", "llama-3-70b", "mistral-7b", "mixtral-8x7b")
    }
    assert got == {"llama-3-8b": 8.03, "llama-3-70b": 70.55, "mistral-7b": 7.24, "mixtral-8x7b": 46.7}


def test_qwen_qkv_biases_by_hand():
    # Qwen2.5-7B: per layer q (28·128), k and v (4·128 each) biases = 4,608; 28 layers = 129,024, which the
    # published total contains: without them the count is short by exactly that.
    m = PRESETS["qwen2.5-7b"]
    assert m.bias_params == (28 + 2 * 4) * 128 == 4_608
    assert custom_model(m, qkv_bias=False).params_total == PUBLISHED_TOTAL["qwen2.5-7b"] - 28 * 4_608
    assert m.phase_params(1)["qkv_o"] == 28 * (3584 * 128 * 2 * (28 + 4) + 4_608 + 3584)


def test_phase_params_add_up_to_the_parameters_read():
    for m in PRESETS.values():
        for experts in (1, m.experts_per_token, m.experts):
            assert (
                sum(m.phase_params(experts).values())
                == m.params_total
                - m.embedding_params * (0 if m.tied_embeddings else 1)
                - (m.experts - experts) * m.layers * m.expert_params
            )
        assert sum(m.phase_matmul_params.values()) == m.matmul_params_per_token


def test_tied_embeddings_read_the_table_as_the_head():
    m = PRESETS["llama-3.2-1b"]
    assert m.tied_embeddings and m.lm_head_params == 0
    assert m.phase_params(1)["head"] == 128_256 * 2048 + 2048


@pytest.mark.parametrize(
    "name, reason",
    [
        ("deepseek-ai/DeepSeek-V3", "DeepSeek-V3 uses multi-head latent attention"),
        ("deepseek-r1", "DeepSeek-R1 uses multi-head latent attention"),
        ("google/gemma-2-9b", "Gemma-2-9B uses layers that alternate"),
        ("openai/gpt-oss-120b", "gpt-oss-120b uses alternating sliding-window"),
        ("ai21labs/Jamba-v0.1", "Jamba-v0.1 uses state-space"),
    ],
)
def test_architectures_the_model_cannot_represent_are_refused(name, reason):
    with pytest.raises(BadInput) as exc:
        lookup_model(name)
    msg = str(exc.value)
    assert msg.startswith(reason) and msg.endswith("cannot represent: refused rather than approximated")
    assert "\n" not in msg


def test_mixtral_active_parameters():
    m = PRESETS["mixtral-8x7b"]
    # Hand count per layer: attention 4096·128·2·(32+8) = 41,943,040; two experts 2·3·4096·14336 = 352,321,536;
    # router 4096·8 = 32,768; norms 8,192. 32 layers + embeddings 2·32000·4096 + final norm 4096.
    per_layer = 41_943_040 + 352_321_536 + 32_768 + 8_192
    assert m.params_active == 32 * per_layer + 2 * 32_000 * 4096 + 4096 == 12_879_925_248
    assert round(m.params_active / 1e9, 1) == 12.9


def test_dense_model_active_equals_total():
    m = PRESETS["llama-3-70b"]
    assert m.params_active == m.params_total


def test_kv_bytes_per_token_by_hand():
    # Llama-3-8B: K and V, 32 layers, 8 KV heads of 128 dims, 2 bytes each = 131,072 B = 128 KiB.
    assert PRESETS["llama-3-8b"].kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2 == 128 * 1024
    # Llama-3-70B: 80 layers, same KV heads: 320 KiB per token in bf16, 160 KiB in fp8.
    assert PRESETS["llama-3-70b"].kv_bytes_per_token(bytes_per_kv_element("bf16")) == 327_680
    assert PRESETS["llama-3-70b"].kv_bytes_per_token(bytes_per_kv_element("fp8")) == 163_840


def test_kv_tokens_sum_by_hand():
    m, dense = PRESETS["mistral-7b"], PRESETS["llama-3-8b"]
    assert dense.kv_tokens_sum(1, 4) == 1 + 2 + 3 + 4
    assert isinstance(dense.kv_tokens_sum(3, 10), int) and isinstance(m.kv_tokens_sum(4000, 5000), int)
    assert dense.kv_tokens_sum(5, 4) == 0
    # Mistral keeps 4096: 4095 + 4096 + 4096 + 4096 for contexts 4095..4098.
    assert m.kv_tokens_sum(4095, 4098) == 4095 + 3 * 4096
    assert m.kv_tokens_sum(5000, 5001) == 2 * 4096
    assert m.kv_tokens_sum(1, 3) == 6
    for first, last in ((1, 1), (1, 4096), (4090, 4200), (4097, 4100), (3, 9000)):
        assert m.kv_tokens_sum(first, last) == sum(m.kv_tokens(c) for c in range(first, last + 1))


def test_sliding_window_caps_kv_tokens():
    m = PRESETS["mistral-7b"]
    assert m.kv_tokens(1000) == 1000
    assert m.kv_tokens(32768) == 4096
    assert PRESETS["llama-3-8b"].kv_tokens(32768) == 32768


# Bytes per block from each format's specification, by hand: (bytes, weights per block).
FORMAT_BLOCKS = {
    "q8_0": (2 + 32, 32),  # ggml block_q8_0: fp16 d + int8 qs[32]
    "q4_0": (2 + 16, 32),  # block_q4_0: fp16 d + uint8 qs[16]
    "q4_1": (2 + 2 + 16, 32),  # block_q4_1: fp16 d, m + qs[16]
    "q5_0": (2 + 4 + 16, 32),  # block_q5_0: fp16 d + uint8 qh[4] + qs[16]
    "q5_1": (2 + 2 + 4 + 16, 32),
    "q2_k": (16 + 64 + 2 + 2, 256),  # block_q2_K: scales[16] + qs[64] + fp16 d, dmin
    "q3_k": (32 + 64 + 12 + 2, 256),  # block_q3_K: hmask[32] + qs[64] + scales[12] + fp16 d
    "q4_k": (2 + 2 + 12 + 128, 256),  # block_q4_K: fp16 d, dmin + scales[12] + qs[128]
    "q5_k": (2 + 2 + 12 + 32 + 128, 256),  # block_q5_K: + qh[32]
    "q6_k": (128 + 64 + 16 + 2, 256),  # block_q6_K: ql[128] + qh[64] + scales[16] + fp16 d
    "nf4": (32 + 4, 64),  # 64 nibbles + fp32 absmax
    "mxfp4": (16 + 1, 32),  # OCP MX: 32 E2M1 + E8M0 scale
    "nvfp4": (8 + 1, 16),  # 16 E2M1 + E4M3 scale
    "fp8-tensor": (1, 1),
}


@pytest.mark.parametrize("name", FORMAT_BLOCKS)
def test_fixed_block_formats_by_hand(name):
    nbytes, weights = FORMAT_BLOCKS[name]
    assert bytes_per_weight(name) == nbytes / weights
    assert not uses_group_size(name)


def test_issue_figures_for_q8_0_and_grouped_int4():
    assert bytes_per_weight("q8_0") == 1.0625
    # GPTQ and AWQ, group 128: 64 B of nibbles + an fp16 scale (2 B) + a 4-bit zero (0.5 B) per 128 weights.
    assert bytes_per_weight("gptq") == bytes_per_weight("awq") == (64 + 2 + 0.5) / 128 == 0.51953125
    assert bytes_per_weight("gptq", group_size=32) == (16 + 2 + 0.5) / 32
    # gpt-fast int4 with group 32: a bf16 scale and a bf16 zero per group.
    assert bytes_per_weight("int4-zp", group_size=32) == (16 + 4) / 32 == 0.625
    assert all(uses_group_size(f) for f in ("int4", "gptq", "awq", "int4-zp"))


def test_formats_compute_in_their_natural_dtype():
    assert natural_compute("fp8-tensor") == natural_compute("fp8") == "fp8"
    assert natural_compute("fp32") == "fp32"
    assert {natural_compute(f) for f in QUANT_FORMATS if f != "fp8-tensor"} == {"bf16"}
    assert weight_formats()[:6] == ["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
    for f in QUANT_FORMATS.values():
        assert f.source and f.layout


def test_bytes_per_weight():
    assert [bytes_per_weight(d) for d in ("fp32", "bf16", "fp16", "fp8", "int8")] == [4, 2, 2, 1, 1]
    # int4: half a byte plus one fp16 scale per group of 128 weights.
    assert bytes_per_weight("int4") == 0.5 + 2 / 128 == 0.515625
    assert bytes_per_weight("int4", group_size=32) == 0.5625
    with pytest.raises(BadInput, match="int3"):
        bytes_per_weight("int3")
    with pytest.raises(BadInput, match="group size"):
        bytes_per_weight("int4", group_size=0)
    with pytest.raises(BadInput, match="gptq group size"):
        bytes_per_weight("gptq", group_size=True)
    assert bytes_per_weight("int4", group_size=1) == 2.5  # a scale per weight is odd, but valid
    with pytest.raises(BadInput, match="KV-cache dtype"):
        bytes_per_kv_element("int4")


@pytest.mark.parametrize(
    "name", ["llama-3-70b", "Llama-3-70B", "LLAMA_3_70B", "llama3-70b", "meta-llama/Meta-Llama-3.1-70B"]
)
def test_lookup_ignores_case_separators_and_org(name):
    assert lookup_model(name) is PRESETS["llama-3-70b"]


def test_unknown_model_suggests_the_closest():
    with pytest.raises(BadInput) as exc:
        lookup_model("llama-3-7b")
    msg = str(exc.value)
    assert "unknown model 'llama-3-7b'" in msg and "closest: llama-3-70b" in msg
    assert "\n" not in msg


def test_unknown_model_without_a_close_name_lists_the_presets():
    with pytest.raises(BadInput, match="known: " + ", ".join(preset_names())):
        lookup_model("gpt-zzz")


def test_custom_model_from_a_shape():
    m = custom_model(layers=2, hidden=64, heads=4, intermediate=128, vocab=100)
    assert (m.kv_heads, m.head_dim, m.experts) == (4, 16, 1)
    # attention 64·16·2·(4+4) = 16,384; MLP 3·64·128 = 24,576; norms 128 → 41,088 per layer;
    # + embedding and head 2·100·64 + final norm 64.
    assert m.params_total == 2 * 41_088 + 12_800 + 64


def test_custom_model_needs_the_shape():
    with pytest.raises(BadInput, match="--layers.*--vocab"):
        custom_model(hidden=64, heads=4, intermediate=128)


def test_custom_over_a_preset_changes_only_what_is_given():
    base = PRESETS["llama-3-8b"]
    m = custom_model(base, layers=16)
    assert m.layers == 16 and m.hidden == base.hidden and m.name == "Llama-3-8B (modified)"
    assert custom_model(base) == base


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(kv_heads=3), "not a multiple of 3 KV heads"),
        (dict(experts_per_token=2), "2 experts per token but only 1"),
        (dict(layers=0), "layers must be a positive integer"),
        (dict(hidden=True), "hidden must be a positive integer"),
        (dict(sliding_window=-1), "sliding window"),
    ],
)
def test_bad_shapes_are_bad_input(change, match):
    fields = dict(name="m", layers=2, hidden=64, heads=4, kv_heads=4, head_dim=16, intermediate=8, vocab=10)
    with pytest.raises(BadInput, match=match):
        ModelShape(**{**fields, **change})


def test_head_dim_must_divide_when_not_given():
    with pytest.raises(BadInput, match="give --head-dim"):
        custom_model(layers=1, hidden=65, heads=4, intermediate=8, vocab=10)


def test_a_batch_not_chosen_is_skipped_before_anything_is_built(monkeypatch):
    """ROOFLINE_MODEL_BATCH / ROOFLINE_ENGINE_BATCH (a quick look's 1): the others say why and measure nothing."""
    from roofline.suite import harness

    monkeypatch.setenv("ROOFLINE_MODEL_BATCH", "1")
    monkeypatch.setenv("ROOFLINE_ENGINE_BATCH", "1")
    why = Skipped("not chosen this run (ROOFLINE_MODEL_BATCH)")
    assert harness.model_decode_grid([8, 64]) == {8: why, 64: why}
    grid = harness.engine_decode_grid("llama.cpp", ["F16", "Q4_0"], [8])
    assert set(grid) == {("F16", 8), ("Q4_0", 8)}
    assert set(grid.values()) == {Skipped("not chosen this run (ROOFLINE_ENGINE_BATCH)")}
