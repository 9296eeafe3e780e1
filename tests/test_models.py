"""Model shapes: parameter counts against the publishers' totals, KV bytes by hand, lookups."""

import pytest

from roofline.errors import BadInput
from roofline.model.llm import (
    PRESETS,
    ModelShape,
    bytes_per_kv_element,
    bytes_per_weight,
    custom_model,
    lookup_model,
    preset_names,
)

# Totals as the publishers' checkpoints count them (safetensors metadata on Hugging Face).
PUBLISHED_TOTAL = {
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
}


@pytest.mark.parametrize("key", PUBLISHED_TOTAL)
def test_parameter_count_matches_the_published_total(key):
    assert PRESETS[key].params_total == PUBLISHED_TOTAL[key]


def test_rounded_totals_as_the_issue_quotes_them():
    got = {k: round(PRESETS[k].params_total / 1e9, 2) for k in PRESETS}
    assert got == {"llama-3-8b": 8.03, "llama-3-70b": 70.55, "mistral-7b": 7.24, "mixtral-8x7b": 46.7}


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


def test_sliding_window_caps_kv_tokens():
    m = PRESETS["mistral-7b"]
    assert m.kv_tokens(1000) == 1000
    assert m.kv_tokens(32768) == 4096
    assert PRESETS["llama-3-8b"].kv_tokens(32768) == 32768


def test_bytes_per_weight():
    assert [bytes_per_weight(d) for d in ("fp32", "bf16", "fp16", "fp8", "int8")] == [4, 2, 2, 1, 1]
    # int4: half a byte plus one fp16 scale per group of 128 weights.
    assert bytes_per_weight("int4") == 0.5 + 2 / 128 == 0.515625
    assert bytes_per_weight("int4", group_size=32) == 0.5625
    with pytest.raises(BadInput, match="int3"):
        bytes_per_weight("int3")
    with pytest.raises(BadInput, match="group size"):
        bytes_per_weight("int4", group_size=0)
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
