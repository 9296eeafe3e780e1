"""Llama GGUF files with random weights, written here with the ``gguf`` package and kept in the data cache.

No download: ``gguf``'s writer (llama.cpp's own Python package) writes a Llama-architecture file
from a :class:`~roofline.model.llm.ModelShape`, every matrix in one format (F16, Q8_0 or Q4_0,
quantized by ``gguf.quants``, the reference of ggml's block layouts) and the norms in F32. With
``tokenizer.ggml.model = "no_vocab"`` llama.cpp makes dummy tokens from the vocabulary size, as its
own ``tests/test-llama-archs.cpp`` does. The values are seeded uniform in ±1/√(columns), so
activations stay near 1 through the RMSNorms and the logits are finite.

A file is written once per (shape, format, seed) beside the weight pools (:func:`~.pools.cache_dir`):
atomically (a reader sees the whole file or none), then its size and SHA-256 in a sidecar
``.json``. Before a file is used both are checked; a file that fails is written afresh, and a
user's own file that is truncated or not a GGUF is refused in one line (BadInput).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BackendUnavailable, BadInput
from ..files import atomic_path, atomic_write
from ..model.gguf_layout import GgufTensor, data_bytes, gguf_format, llama_tensors
from ..model.llm import ModelShape
from .pools import cache_dir, check_fits

#: Bumped whenever the bytes written for the same (shape, format, seed) change: old files are not reused.
LAYOUT_VERSION = 1
#: Elements generated and quantized at a time (bounds the writer's memory to a few of these).
CHUNK_ELEMENTS = 2**22
#: What the header, the metadata and the 32-byte alignment add to the tensors' bytes, at most.
HEADER_ALLOWANCE = 2**20
#: The context length the file declares (the largest a run may ask for).
CONTEXT_LENGTH = 8192
#: llama.cpp's names for the file types (``general.file_type``), from gguf's LlamaFileType.
FILE_TYPES = {"F16": "MOSTLY_F16", "Q8_0": "MOSTLY_Q8_0", "Q4_0": "MOSTLY_Q4_0"}
#: The unquantized GGUF types and their numpy dtypes.
PLAIN = {"F32": np.float32, "F16": np.float16}


def import_gguf():
    """The ``gguf`` package; BackendUnavailable (a skip) with how to install it."""
    try:
        import gguf
    except ImportError as exc:
        raise BackendUnavailable(
            f"the gguf package is not installed (pip install 'roofline[engines]'): {exc}"
        ) from None
    return gguf


@dataclass(frozen=True)
class GgufFile:
    """A GGUF file ready to load: its path, the shape and format it holds, and its size."""

    path: Path
    shape: ModelShape
    format: str
    nbytes: int


def _key(shape: ModelShape, fmt: str, seed: int) -> str:
    fields = (shape.layers, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.intermediate, shape.vocab)
    text = f"v{LAYOUT_VERSION} {fmt} seed{seed} tied{int(shape.tied_embeddings)} " + " ".join(map(str, fields))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_path(shape: ModelShape, fmt: str, seed: int = 0) -> Path:
    """Where the file of (shape, format, seed) lives in the data cache."""
    fmt = gguf_format(fmt)
    return cache_dir() / f"llama-{shape.layers}l-{shape.hidden}h-{fmt.lower()}-{_key(shape, fmt, seed)}.gguf"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(2**24):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def is_whole(path: Path) -> bool:
    """Whether ``path`` is the file its sidecar describes: the size, then the SHA-256 of every byte, unless
    its modification time is still the one the sidecar recorded when it was written (hashing the three
    default files took 1.7 s of every make bench here; any write since moves the time)."""
    try:
        want = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        stat = path.stat()
        if stat.st_size != want["size"]:
            return False
        return stat.st_mtime_ns == want.get("mtime_ns") or file_sha256(path) == want["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def model_file(shape: ModelShape, fmt: str, seed: int = 0) -> GgufFile:
    """The cached GGUF of ``shape`` in ``fmt``, written now if absent or not whole; BadInput where it cannot be."""
    fmt = gguf_format(fmt)
    tensors = llama_tensors(shape, fmt)
    path = cached_path(shape, fmt, seed)
    if not is_whole(path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"cannot use the data cache {path.parent}: {exc.strerror or exc}") from None
        need = data_bytes(shape, fmt) + HEADER_ALLOWANCE
        check_fits(need, f"the {fmt} GGUF of {shape.name} ({shape.layers} layers)", path.parent)
        write_llama_gguf(path, shape, fmt, tensors, seed)
    else:
        _remember_mtime(path)
    return GgufFile(path, shape, fmt, path.stat().st_size)


def _remember_mtime(path: Path) -> None:
    """Add the modification time of a file its hash just found whole to a sidecar written before it was kept."""
    meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
    if "mtime_ns" not in meta:
        atomic_write(_sidecar(path), json.dumps({**meta, "mtime_ns": path.stat().st_mtime_ns}, indent=1) + "\n")


def write_llama_gguf(path: Path, shape: ModelShape, fmt: str, tensors: tuple[GgufTensor, ...], seed: int = 0) -> None:
    """Write the file atomically, then its sidecar (size and SHA-256); nothing half-written is left on error."""
    gguf = import_gguf()
    with atomic_path(path) as tmp:
        writer = gguf.GGUFWriter(tmp, "llama")
        _metadata(writer, gguf, shape, fmt)
        for t in tensors:
            qtype = getattr(gguf.GGMLQuantizationType, t.type)
            if t.type in PLAIN:
                writer.add_tensor_info(t.name, t.shape, np.dtype(PLAIN[t.type]), t.nbytes)
            else:
                byte_shape = gguf.quant_shape_to_byte_shape(t.shape, qtype)
                writer.add_tensor_info(t.name, byte_shape, np.dtype(np.uint8), t.nbytes, raw_dtype=qtype)
        try:
            writer.open_output_file()
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_ti_data_to_file()
            for i, t in enumerate(tensors):
                writer.write_tensor_data(_tensor_data(gguf, t, seed, i))
        finally:
            writer.close()
        written = tmp.stat()
        meta = {"size": written.st_size, "sha256": file_sha256(tmp), "format": fmt, "seed": seed}
        meta["mtime_ns"] = written.st_mtime_ns  # the rename below keeps it
    atomic_write(_sidecar(path), json.dumps(meta, indent=1) + "\n")


def _metadata(writer, gguf, shape: ModelShape, fmt: str) -> None:
    writer.add_name(f"{shape.name} ({shape.layers} layers, random weights, written by roofline)")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.intermediate)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(shape.vocab)
    writer.add_file_type(int(getattr(gguf.LlamaFileType, FILE_TYPES[fmt])))
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_tokenizer_model("no_vocab")


def _rows(t: GgufTensor, seed: int, index: int) -> Iterator[np.ndarray]:
    """The tensor's float32 values, a block of whole rows at a time (norms: ones)."""
    if len(t.shape) == 1:
        yield np.ones(t.shape, dtype=np.float32)
        return
    rows, cols = t.shape
    scale = np.float32(1 / np.sqrt(cols))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    step = max(1, CHUNK_ELEMENTS // cols)
    for start in range(0, rows, step):
        block = rng.random((min(step, rows - start), cols), dtype=np.float32)
        block *= 2 * scale
        block -= scale
        yield block


def _tensor_data(gguf, t: GgufTensor, seed: int, index: int) -> np.ndarray:
    """The bytes of one tensor as ``gguf`` writes them, quantized a block of rows at a time."""
    qtype = getattr(gguf.GGMLQuantizationType, t.type)
    out, filled = None, 0
    for block in _rows(t, seed, index):
        part = gguf.quants.quantize(block, qtype)
        if out is None:
            out = np.empty((t.shape[0], *part.shape[1:]), dtype=part.dtype)
        out[filled : filled + len(part)] = part
        filled += len(part)
    if out.nbytes != t.nbytes:  # the layout table and gguf's quantizer disagree: a bug, not bad input
        raise AssertionError(f"{t.name}: gguf wrote {out.nbytes} bytes, the layout says {t.nbytes}")
    return out
