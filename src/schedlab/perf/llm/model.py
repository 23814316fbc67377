"""Dense decoder-only transformer configurations: parameters, FLOPs, and the model catalog.

A :class:`ModelConfig` holds what the memory and step-time formulas need (layers ``L``, hidden
``h``, heads ``a``, KV heads ``a_kv``, FFN hidden ``f``, activation, vocabulary ``V``, sequence
``s``). Counting conventions follow Megatron's SC '21 paper: a layer's matrix-multiply parameters
are ``h·(h + 2h·a_kv/a) + h²`` (attention) plus ``k·h·f`` (FFN, ``k`` = 2 for GeLU, 3 for SwiGLU);
norms and biases hold parameters (and memory) but no FLOPs worth counting.

The catalog (``models.toml`` beside this file) names each entry's public source; a user may add
models with ``--models FILE.toml`` (``[models.NAME]`` tables with the same fields).
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import read_text

ACTIVATIONS = ("gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("learned", "rope")
CATALOG_FILE = Path(__file__).with_name("models.toml")
#: The largest layer count, width, head count, vocabulary or sequence a model may give (2²⁴ =
#: 16,777,216). The largest models built stay far below it (16,384 hidden, 126 layers, a
#: 256K vocabulary, a 10M-token context), and below it every count the planner forms fits its
#: 64-bit arithmetic; past 2⁶³ a value could not even be converted (an OverflowError).
MAX_DIMENSION = 2**24
#: The largest global batch, in sequences, the planner takes (2²⁴ = 16,777,216): thousands of
#: times the largest published batches (Llama 3 405B: 2,048 sequences of 8,192 tokens), and
#: within the 64-bit arithmetic of ``d·b·m``.
MAX_BATCH = 2**24


@dataclass(frozen=True)
class ModelConfig:
    """One dense decoder model; see the module docstring for the symbols."""

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    kv_heads: int = 0  # 0: as many as ``heads`` (multi-head attention)
    ffn: int = 0  # 0: 4·hidden
    act: str = "gelu"
    tied: bool = False
    dropout: bool = False
    bias: bool = False
    norm: str = "rmsnorm"
    position: str = "rope"
    #: Global batch in sequences this configuration was published with (0: none given).
    batch: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.ffn == 0:
            object.__setattr__(self, "ffn", 4 * self.hidden)
        where = f"model {self.name!r}"
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(
                    f"{where}: '{name}' must be a positive whole number (got {value!r})"
                )
            if value > MAX_DIMENSION:
                raise InputError(
                    f"{where}: '{name}' must be ≤ {MAX_DIMENSION:,} (2^24, far beyond any model "
                    f"built; got {value})"
                )
        if not isinstance(self.batch, int) or self.batch < 0:
            raise InputError(f"{where}: 'batch' must be a whole number ≥ 0 (got {self.batch!r})")
        if self.batch > MAX_BATCH:
            raise InputError(
                f"{where}: 'batch' must be ≤ {MAX_BATCH:,} sequences (2^24; got {self.batch})"
            )
        if self.hidden % self.heads:
            raise InputError(
                f"{where}: hidden {self.hidden} is not a multiple of heads {self.heads} "
                f"(head size would be {self.hidden / self.heads:g})"
            )
        if self.kv_heads > self.heads or self.heads % self.kv_heads:
            raise InputError(
                f"{where}: kv_heads {self.kv_heads} must divide heads {self.heads} "
                "(grouped-query attention shares each KV head among a whole number of heads)"
            )
        for name, allowed in (("act", ACTIVATIONS), ("norm", NORMS), ("position", POSITIONS)):
            if getattr(self, name) not in allowed:
                raise InputError(
                    f"{where}: '{name}' must be one of {', '.join(allowed)} "
                    f"(got {getattr(self, name)!r})"
                )

    # -- parameters ----------------------------------------------------------------------------
    @property
    def kv_ratio(self) -> float:
        """``a_kv / a``: the share of K and V projections in grouped-query attention."""
        return self.kv_heads / self.heads

    @property
    def ffn_matrices(self) -> int:
        """``k``: FFN weight matrices (two for GeLU, three for SwiGLU's gate, up and down)."""
        return 3 if self.act == "swiglu" else 2

    @property
    def matmul_params_per_layer(self) -> int:
        """Parameters of a layer's matrix multiplies: ``h·(h + 2h·a_kv/a) + h² + k·h·f``."""
        h = self.hidden
        kv = h * self.kv_heads // self.heads
        return h * (h + 2 * kv) + h * h + self.ffn_matrices * h * self.ffn

    @property
    def norm_params_per_layer(self) -> int:
        """Two norms per layer: weight (RMSNorm) or weight and bias (LayerNorm) each."""
        return 2 * self.hidden * (2 if self.norm == "layernorm" else 1)

    @property
    def bias_params_per_layer(self) -> int:
        if not self.bias:
            return 0
        h = self.hidden
        kv = h * self.kv_heads // self.heads
        return (h + 2 * kv) + h + (self.ffn_matrices - 1) * self.ffn + h

    @property
    def params_per_layer(self) -> int:
        return (
            self.matmul_params_per_layer + self.norm_params_per_layer + self.bias_params_per_layer
        )

    @property
    def embedding_params(self) -> int:
        """``V·h`` (one copy; an untied model has a second one as its output layer)."""
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """All parameters: ``L·P_layer + V·h·(1 if tied else 2)`` plus learned positions and
        the final norm."""
        extra = self.seq_len * self.hidden if self.position == "learned" else 0
        final = self.hidden * (2 if self.norm == "layernorm" else 1)
        return (
            self.layers * self.params_per_layer
            + self.embedding_params * (1 if self.tied else 2)
            + extra
            + final
        )

    @property
    def tensors_per_layer(self) -> int:
        """Parameter tensors of one layer (what a per-tensor collective issues calls for):
        ``4 + k`` matrices, the norms' tensors, and as many biases as matrices."""
        matrices = 4 + self.ffn_matrices
        norms = 2 * (2 if self.norm == "layernorm" else 1)
        return matrices + norms + (matrices if self.bias else 0)

    @property
    def extra_tensors(self) -> int:
        """Tensors outside the layers: embedding, output layer (untied), final norm, positions."""
        return (
            1
            + (0 if self.tied else 1)
            + (2 if self.norm == "layernorm" else 1)
            + (1 if self.position == "learned" else 0)
        )

    # -- FLOPs -----------------------------------------------------------------------------------
    def layer_forward_flops(
        self, micro_batch: float, seq: float | None = None, ffn: float | None = None
    ) -> float:
        """Forward FLOPs of one layer for ``micro_batch`` sequences: ``2·b·s·P_matmul + 4·b·s²·h``
        (the second term is QKᵀ and AV, counted whole as Megatron does). ``ffn`` replaces the FFN
        width in the count (InternEvo counts its 8h/3 before rounding it up to 11,008)."""
        s = self.seq_len if seq is None else seq
        b = micro_batch
        matmul = self.matmul_params_per_layer
        if ffn is not None:
            matmul += self.ffn_matrices * self.hidden * (ffn - self.ffn)
        return 2.0 * b * s * matmul + 4.0 * b * s * s * self.hidden

    def attention_core_forward_flops(self, micro_batch: float) -> float:
        """The ``4·b·s²·h`` part of a layer's forward FLOPs (what selective recompute redoes)."""
        s = self.seq_len
        return 4.0 * micro_batch * s * s * self.hidden

    def logits_forward_flops(self, micro_batch: float) -> float:
        """``2·b·s·h·V``: the output layer."""
        return 2.0 * micro_batch * self.seq_len * self.hidden * self.vocab

    def step_flops(self, batch: float, recompute: str = "none", ffn: float | None = None) -> float:
        """FLOPs of one training step over ``batch`` sequences: backward is twice the forward;
        full recompute redoes each layer's forward (not the logits), selective its attention
        core. ``recompute='none'`` is the model-FLOPs count MFU uses."""
        layers = self.layers * self.layer_forward_flops(batch, ffn=ffn)
        logits = self.logits_forward_flops(batch)
        redo = {
            "none": 0.0,
            "selective": self.layers * self.attention_core_forward_flops(batch),
            "full": layers,
        }[recompute]
        return 3.0 * (layers + logits) + redo

    def flops_per_token(self, recompute: str = "none", ffn: float | None = None) -> float:
        return self.step_flops(1.0, recompute, ffn) / self.seq_len

    def describe(self) -> str:
        kv = f", kv {self.kv_heads}" if self.kv_heads != self.heads else ""
        return (
            f"{self.name}: {self.params / 1e9:.2f} B params (L {self.layers}, h {self.hidden}, "
            f"a {self.heads}{kv}, f {self.ffn} {self.act}, V {self.vocab}, s {self.seq_len})"
        )


def sc21_params(layers: int, hidden: int, vocab: int, seq: int) -> float:
    """The SC '21 paper's closed form for its GPT models (GeLU, ``f = 4h``, tied embeddings,
    learned positions): ``12·L·h²·(1 + 13/(12h) + (V + s)/(12·L·h))``."""
    L, h = layers, hidden
    return 12.0 * L * h * h * (1.0 + 13.0 / (12.0 * h) + (vocab + seq) / (12.0 * L * h))


def sc21_step_flops(batch: int, layers: int, hidden: int, vocab: int, seq: int) -> float:
    """SC '21's FLOPs per step with full recompute: ``96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h))``."""
    L, h, s = layers, hidden, seq
    return 96.0 * batch * s * L * h * h * (1.0 + s / (6.0 * h) + vocab / (16.0 * L * h))


_FIELDS = {f.name: f.type for f in fields(ModelConfig)}
_INTS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "batch")
_BOOLS = ("tied", "dropout", "bias")
_STRS = ("act", "norm", "position", "source")


def model_from_mapping(name: str, table: Mapping[str, Any], where: str) -> ModelConfig:
    """A ModelConfig from a TOML table or trace fields; InputError naming ``where`` and the field
    for anything unknown, missing or of the wrong type."""
    unknown = sorted(set(table) - (set(_FIELDS) - {"name"}))
    if unknown:
        raise InputError(
            f"unknown model field {unknown[0]!r} for {name!r} in {where} "
            f"(known: {', '.join(k for k in _FIELDS if k != 'name')})"
        )
    missing = [k for k in ("layers", "hidden", "heads", "vocab", "seq_len") if k not in table]
    if missing:
        raise InputError(f"model {name!r} in {where} lacks field {missing[0]!r}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in _INTS and (not isinstance(value, int) or isinstance(value, bool)):
            raise InputError(
                f"model {name!r} in {where}: field '{key}' must be a whole number (got {value!r})"
            )
        if key in _BOOLS and not isinstance(value, bool):
            raise InputError(
                f"model {name!r} in {where}: field '{key}' must be true or false (got {value!r})"
            )
        if key in _STRS and not isinstance(value, str):
            raise InputError(
                f"model {name!r} in {where}: field '{key}' must be a string (got {value!r})"
            )
        values[key] = value
    try:
        return ModelConfig(name=name, **values)
    except InputError as exc:
        raise InputError(f"{exc.message} in {where}") from None


def read_catalog(path: str | Path) -> dict[str, ModelConfig]:
    """The ``[models.NAME]`` tables of a TOML file."""
    file = Path(path)
    # read_text turns a missing file, a folder, a FIFO or bytes that are not UTF-8 into one
    # line naming the file (a binary file handed to --models must not end in a traceback).
    text = read_text(file, "model catalog")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(file)) from None
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise InputError("no [models.NAME] tables", path=str(file))
    out: dict[str, ModelConfig] = {}
    for name, table in models.items():
        if not isinstance(table, dict):
            raise InputError(f"'models.{name}' must be a table", path=str(file))
        out[name] = model_from_mapping(name, table, str(file))
    return out


@cache
def builtin_models() -> dict[str, ModelConfig]:
    """The shipped catalog (SC '21 GPT rows, InternLM-7B, Llama 3 8B/70B/405B)."""
    return read_catalog(CATALOG_FILE)


def get_model(name: str, extra: Mapping[str, ModelConfig] | None = None) -> ModelConfig:
    """A model by catalog name (``extra`` first, then the shipped catalog), with a suggestion on
    a typo."""
    known = {**builtin_models(), **(extra or {})}
    if name in known:
        return known[name]
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
    raise InputError(f"unknown model {name!r}{hint}")


def tokens_per_step(model: ModelConfig, batch: int) -> int:
    return batch * model.seq_len


def parse_batch_tokens(text: str, model: ModelConfig) -> int:
    """``4M``, ``16M``, ``4194304`` tokens → whole sequences of the model (must divide)."""
    raw = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(raw[-1:], 1)
    number = raw[:-1] if scale > 1 else raw
    try:
        tokens = float(number) * scale
    except ValueError:
        raise InputError(
            f"'--batch-tokens' must be a number like 4M or 4194304 (got {text!r})"
        ) from None
    if not math.isfinite(tokens) or tokens <= 0:
        raise InputError(f"'--batch-tokens' must be a finite number > 0 (got {text!r})")
    seqs = tokens / model.seq_len
    if seqs > MAX_BATCH:
        # Checked before the whole-sequence test: at 1e30 tokens a float has no fraction left.
        raise InputError(
            f"'--batch-tokens' {text} is {seqs:.3g} sequences of {model.seq_len:,} tokens; the "
            f"planner takes at most {MAX_BATCH:,} sequences a step (2^24, thousands of times "
            "the largest published batches)"
        )
    if abs(seqs - round(seqs)) > 1e-9 or round(seqs) < 1:
        raise InputError(
            f"'--batch-tokens' {text} is not a whole number of {model.seq_len}-token sequences "
            f"({seqs:g}) for {model.name}"
        )
    return round(seqs)
