"""LLM shapes as the roofline sees them: parameter counts, bytes per weight, KV-cache bytes per token.

A :class:`ModelShape` is a Llama-style decoder (grouped-query attention, SwiGLU MLP, RMSNorm,
no biases), optionally a mixture of experts. Presets live in ``models.toml`` beside this module;
every count here is computed from the shape, never stored.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, fields
from importlib import resources

from ..errors import BadInput, positive_int

#: Bytes per stored weight, before any quantization scales.
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
#: Bytes per KV-cache element.
KV_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
#: int4 weights carry one scale per group of this many weights (GPTQ/AWQ-style) ...
INT4_GROUP_SIZE = 128
#: ... stored in this many bytes (an fp16 scale).
INT4_SCALE_BYTES = 2


def bytes_per_weight(dtype: str, group_size: int = INT4_GROUP_SIZE) -> float:
    """Bytes one weight occupies, with int4's group scales included (0.5 + 2/group_size).

    fp8 and int8 scales (per tensor or per output channel) are a vanishing fraction and are
    not counted.
    """
    if dtype not in WEIGHT_BYTES:
        raise BadInput(f"unknown weight dtype {dtype!r} (use {', '.join(WEIGHT_BYTES)})")
    if dtype != "int4":
        return WEIGHT_BYTES[dtype]
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise BadInput(f"int4 group size must be a positive integer, got {group_size!r}")
    return WEIGHT_BYTES["int4"] + INT4_SCALE_BYTES / group_size


def bytes_per_kv_element(dtype: str) -> float:
    """Bytes per stored key or value element."""
    if dtype not in KV_BYTES:
        raise BadInput(f"unknown KV-cache dtype {dtype!r} (use {', '.join(KV_BYTES)})")
    return KV_BYTES[dtype]


#: The positive-integer fields of a shape; with ``sliding_window`` (optional) they are the flags a user may set.
COUNT_FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "vocab",
    "experts",
    "experts_per_token",
)
SETTABLE_FIELDS = (*COUNT_FIELDS, "sliding_window")


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape.

    ``intermediate`` is the MLP width of one expert; ``experts`` = 1 means a dense model.
    ``sliding_window`` caps the KV tokens kept per sequence (None: the whole context).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    experts: int = 1
    experts_per_token: int = 1
    sliding_window: int | None = None
    tied_embeddings: bool = False
    source: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in COUNT_FIELDS:
            positive_int(f"{self.name}: {f.replace('_', ' ')}", getattr(self, f))
        if self.sliding_window is not None:
            positive_int(f"{self.name}: sliding window", self.sliding_window)
        if self.heads % self.kv_heads:
            raise BadInput(f"{self.name}: {self.heads} heads is not a multiple of {self.kv_heads} KV heads")
        if self.experts_per_token > self.experts:
            raise BadInput(f"{self.name}: {self.experts_per_token} experts per token but only {self.experts} experts")

    # ---- parameter counts ----------------------------------------------------------------

    @property
    def attention_params(self) -> int:
        """Per layer: q and o (hidden × heads·head_dim each), k and v (hidden × kv_heads·head_dim each)."""
        return self.hidden * self.head_dim * 2 * (self.heads + self.kv_heads)

    @property
    def expert_params(self) -> int:
        """One SwiGLU MLP (gate, up, down): 3 · hidden · intermediate."""
        return 3 * self.hidden * self.intermediate

    @property
    def router_params(self) -> int:
        """Per layer: the MoE router (hidden × experts), 0 for a dense model."""
        return self.hidden * self.experts if self.experts > 1 else 0

    @property
    def norm_params(self) -> int:
        """Per layer: two RMSNorm weight vectors."""
        return 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        """The input embedding table (vocab × hidden)."""
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        """The output projection; 0 when it shares the embedding table."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    def _params(self, experts: float) -> float:
        per_layer = self.attention_params + experts * self.expert_params + self.router_params + self.norm_params
        return self.layers * per_layer + self.embedding_params + self.lm_head_params + self.hidden

    @property
    def params_total(self) -> int:
        """Every stored parameter (all experts, embeddings, norms)."""
        return int(self._params(self.experts))

    @property
    def params_active(self) -> int:
        """Parameters one token uses (experts_per_token of the experts), as MoE papers count them."""
        return int(self._params(self.experts_per_token))

    def params_read(self, experts: float) -> float:
        """Parameters one decode step reads when ``experts`` experts per layer are touched.

        The input embedding is looked up, not read: only one row per sequence, which is ignored.
        A tied table is read in full as the output projection.
        """
        table = self.embedding_params if self.tied_embeddings else 0
        return self._params(experts) - self.embedding_params + table

    @property
    def matmul_params_per_token(self) -> int:
        """Weights one token multiplies by (2 FLOPs each): attention, active experts, router, output head."""
        per_layer = self.attention_params + self.experts_per_token * self.expert_params + self.router_params
        return self.layers * per_layer + self.vocab * self.hidden

    # ---- the KV cache --------------------------------------------------------------------

    def kv_tokens(self, context: int) -> int:
        """KV entries kept and read per sequence at ``context`` tokens (capped by a sliding window)."""
        return context if self.sliding_window is None else min(context, self.sliding_window)

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        """2 (K and V) · layers · kv_heads · head_dim · bytes per element."""
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bytes

    def attention_flops_per_token(self, context: int) -> int:
        """q·Kᵀ and weights·V over the kept context: 4 · layers · heads · head_dim · kv_tokens."""
        return 4 * self.layers * self.heads * self.head_dim * self.kv_tokens(context)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["aliases"] = list(self.aliases)
        out["params_total"] = self.params_total
        out["params_active"] = self.params_active
        return out


# ---- presets ----------------------------------------------------------------------------------

#: The fields a shape needs; the rest have defaults.
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")


def _key(name: str) -> str:
    """'meta-llama/Meta-Llama-3-8B' → 'metallama38b': case, separators and an org prefix don't matter."""
    return re.sub(r"[^a-z0-9]", "", name.rsplit("/", 1)[-1].lower())


def _load_presets() -> dict[str, ModelShape]:
    text = resources.files(__package__).joinpath("models.toml").read_text(encoding="utf-8")
    presets = {}
    for key, entry in tomllib.loads(text).items():
        entry = dict(entry)
        entry["aliases"] = tuple(entry.get("aliases", ()))
        presets[key] = ModelShape(**entry)
    return presets


PRESETS: dict[str, ModelShape] = _load_presets()


def preset_names() -> list[str]:
    """The preset keys, e.g. 'llama-3-8b'."""
    return list(PRESETS)


def lookup_model(name: str) -> ModelShape:
    """A preset by name or alias (case and separators ignored); BadInput with the closest names."""
    index = {}
    for key, shape in PRESETS.items():
        for alias in (key, shape.name, *shape.aliases):
            index[_key(alias)] = key
    wanted = _key(name)
    if wanted in index:
        return PRESETS[index[wanted]]
    close = difflib.get_close_matches(wanted, list(index), n=3, cutoff=0.5)
    suggestions = list(dict.fromkeys(index[c] for c in close))
    hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
    raise BadInput(f"unknown model {name!r}{hint} (known: {', '.join(PRESETS)}, or 'custom' with a shape)")


def custom_model(base: ModelShape | None = None, name: str | None = None, **shape: object) -> ModelShape:
    """A shape from keyword fields, optionally over a preset; head_dim defaults to hidden / heads.

    Without ``base`` every field in :data:`SHAPE_FIELDS` except head_dim and kv_heads is needed
    (kv_heads defaults to heads, i.e. multi-head attention).
    """
    given = {k: v for k, v in shape.items() if v is not None}
    unknown = set(given) - {f.name for f in fields(ModelShape)}
    if unknown:
        raise BadInput(f"unknown model field(s): {', '.join(sorted(unknown))}")
    if base is not None:
        if not given and name is None:
            return base
        if "hidden" in given or "heads" in given:
            given.setdefault("head_dim", None)
        merged = {**{f.name: getattr(base, f.name) for f in fields(ModelShape)}, **given}
        merged["name"] = name or (f"{base.name} (modified)" if given else base.name)
        merged["aliases"] = ()
        if merged.get("head_dim") is None:
            merged["head_dim"] = _default_head_dim(merged)
        return ModelShape(**merged)
    missing = [f for f in SHAPE_FIELDS if f not in given and f not in ("head_dim", "kv_heads")]
    if missing:
        raise BadInput(f"a custom model needs {', '.join('--' + f.replace('_', '-') for f in missing)}")
    given.setdefault("kv_heads", given["heads"])
    if "head_dim" not in given:
        given["head_dim"] = _default_head_dim(given)
    return ModelShape(name=name or "custom", **given)


def _default_head_dim(shape: dict[str, object]) -> int:
    hidden, heads = shape["hidden"], shape["heads"]
    positive_int("hidden", hidden)
    positive_int("heads", heads)
    if hidden % heads:
        raise BadInput(f"hidden {hidden} is not a multiple of {heads} heads: give --head-dim")
    return hidden // heads
