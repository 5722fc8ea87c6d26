"""GPT-2 configuration, read from and written to Hugging Face ``config.json`` files."""
import dataclasses
import json
import pathlib

# Hugging Face activation_function names -> gpk_array.linear's activation names
ACTIVATIONS = {
    "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
    "gelu": "gelu", "relu": "relu", "silu": "silu", "swish": "silu",
}


@dataclasses.dataclass
class GPT2Config:
    """GPT-2's hyperparameters, with Hugging Face's names; every field is type-checked on construction."""
    vocab_size: int = 50257
    n_positions: int = 1024      # context length
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None   # MLP width; None means 4 * n_embd
    layer_norm_epsilon: float = 1e-5
    activation_function: str = "gelu_new"
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    bos_token_id: int | None = 50256
    eos_token_id: int | None = 50256

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            want = _FIELD_TYPES[f.name]
            ok = isinstance(v, want) and not (isinstance(v, bool) and bool not in want)
            if not ok and not (v is None and type(None) in want):
                names = " or ".join("null" if t is type(None) else t.__name__ for t in want)
                raise TypeError(f"GPT-2 config field {f.name} must be {names}, got {v!r:.60}")
        for name in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.activation_function not in ACTIVATIONS:
            raise ValueError(f"unsupported activation_function {self.activation_function!r}: "
                             f"use one of {sorted(ACTIVATIONS)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")

    @property
    def head_dim(self):
        """Width of one attention head (n_embd / n_head)."""
        return self.n_embd // self.n_head

    @property
    def inner_dim(self):
        """Width of the MLP's hidden layer (n_inner, or 4 * n_embd when unset)."""
        return self.n_inner or 4 * self.n_embd

    @property
    def num_parameters(self):
        """Parameters of the model (the LM head is tied to the token embeddings)."""
        C, F = self.n_embd, self.inner_dim
        block = (C * 3 * C + 3 * C) + (C * C + C) + (C * F + F) + (F * C + C) + 4 * C
        return (self.vocab_size + self.n_positions) * C + self.n_layer * block + 2 * C

    @property
    def activation(self):
        """The activation's name for gpk_array.linear."""
        return ACTIVATIONS[self.activation_function]

    # --- the published sizes ---------------------------------------------------------------------------
    @classmethod
    def gpt2(cls, **kw):
        """124M parameters."""
        return cls(**kw)

    @classmethod
    def gpt2_medium(cls, **kw):
        """355M parameters."""
        return cls(**{"n_embd": 1024, "n_layer": 24, "n_head": 16, **kw})

    @classmethod
    def gpt2_large(cls, **kw):
        """774M parameters."""
        return cls(**{"n_embd": 1280, "n_layer": 36, "n_head": 20, **kw})

    @classmethod
    def gpt2_xl(cls, **kw):
        """1.5B parameters."""
        return cls(**{"n_embd": 1600, "n_layer": 48, "n_head": 25, **kw})

    # --- Hugging Face config.json ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d):
        """From a Hugging Face GPT-2 config dict; keys that do not concern inference are ignored."""
        if not isinstance(d, dict):
            raise ValueError(f"a GPT-2 config must be a JSON object, got {type(d).__name__}")
        model_type = d.get("model_type", "gpt2")
        if model_type != "gpt2":
            raise ValueError(f"not a GPT-2 config: model_type is {model_type!r}")
        kw = {f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d}
        if "n_positions" not in d and "n_ctx" in d:  # very old configs
            kw["n_positions"] = d["n_ctx"]
        return cls(**kw)

    @classmethod
    def from_json(cls, path):
        """From a ``config.json`` file, or the one in a model directory."""
        path = pathlib.Path(path)
        if path.is_dir():
            path = path / "config.json"
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{path}: not valid JSON: {e}") from None
        try:
            return cls.from_dict(d)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{path}: {e}") from None

    def to_dict(self):
        """A Hugging Face-compatible config dict (transformers' GPT2Config reads it)."""
        d = dataclasses.asdict(self)
        d.update(model_type="gpt2", architectures=["GPT2LMHeadModel"], n_ctx=self.n_positions)
        return d

    def save(self, path):
        """Write the config as Hugging Face's ``config.json`` (into ``path`` when it is a directory)."""
        path = pathlib.Path(path)
        if path.is_dir():
            path = path / "config.json"
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


# the accepted Python types of each field (checked in __post_init__: a config.json with "n_layer": "1" is refused)
_FIELD_TYPES = {
    "vocab_size": (int,), "n_positions": (int,), "n_embd": (int,), "n_layer": (int,), "n_head": (int,),
    "n_inner": (int, type(None)), "layer_norm_epsilon": (float, int), "activation_function": (str,),
    "scale_attn_weights": (bool,), "scale_attn_by_inverse_layer_idx": (bool,),
    "bos_token_id": (int, type(None)), "eos_token_id": (int, type(None)),
}
