"""GPT-2, written as array-API code on gpk_array plus its fused ops, on the CPU and on CUDA devices.

Checkpoints are Hugging Face GPT-2 safetensors (``wte.weight``, ``h.0.attn.c_attn.weight``, ...; the names may
carry a ``transformer.`` prefix; the LM head is tied to ``wte``). Their linear layers are Conv1D modules that store
weights as (in_features, out_features). They are transposed once, at load, into (out_features, in_features), the
layout of ``gpk_array.linear`` (and of torch.nn.functional.linear): the same layout as the tied LM head, one
convention for every fused linear kernel, and the one cuBLAS and a decode GEMV like best, since each output
reads one contiguous row of weights.

The forward pass reads and writes a preallocated KV cache with fixed shapes, no host synchronization and no host
to device copies, so a decode step can be captured in a CUDA graph (see generate.py).
"""
import math
import pathlib
import sys

import numpy as np

import gpk_array as gp

from .._kernels.nn import constant_weights
from .._ops.indexing import take_unchecked
from .config import GPT2Config
from .safetensors import SafeTensorsFile, save_file

_CONV1D = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
_LAYER_PARAMS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                 "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                 "mlp.c_proj.weight", "mlp.c_proj.bias")
_IGNORED = (".attn.bias", ".attn.masked_bias", "lm_head.weight")  # causal-mask buffers; the tied head


class CheckpointError(KeyError, ValueError):
    """A checkpoint lacks tensors of the model (a KeyError, and a ValueError: the input is wrong)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def hf_param_names(config):
    """The Hugging Face names of a GPT-2 checkpoint's parameters (without the ``transformer.`` prefix)."""
    names = ["wte.weight", "wpe.weight"]
    for i in range(config.n_layer):
        names += [f"h.{i}.{p}" for p in _LAYER_PARAMS]
    return names + ["ln_f.weight", "ln_f.bias"]


class KVCache:
    """Keys and values of every layer: one (2, batch, n_head, max_len, head_dim) array per layer, preallocated.

    Row b of the batch holds one sequence; slot j holds the token at position j. ``k(i)`` and ``v(i)`` are the
    (batch, n_head, max_len, head_dim) halves of layer i.
    """

    def __init__(self, config, batch, max_len, *, dtype, device):
        if not 1 <= max_len <= config.n_positions:
            raise ValueError(f"max_len must be in [1, {config.n_positions}], got {max_len}")
        self.batch, self.max_len = batch, max_len
        shape = (2, batch, config.n_head, max_len, config.head_dim)
        # zeros, not empty: a slot never written must hold no NaN (masked weights are 0, and 0 * NaN is NaN)
        self.layers = [gp.zeros(shape, dtype=dtype, device=device) for _ in range(config.n_layer)]

    def k(self, i):
        """The keys of layer ``i``: a (batch, n_head, max_len, head_dim) view."""
        return self.layers[i][0]

    def v(self, i):
        """The values of layer ``i``: a (batch, n_head, max_len, head_dim) view."""
        return self.layers[i][1]

    def write(self, i, kv, rows, slots):
        """Store kv (B, T, 2, H, D) of layer i at cache rows (B, 1) and slots (B, T), in place."""
        by_slot = gp.permute_dims(self.layers[i], (1, 3, 0, 2, 4))  # a (batch, max_len, 2, H, D) view
        by_slot[rows, slots] = kv

    def read(self, i, length, rows=None):
        """Keys and values of layer i at slots [0, length) of cache rows ``rows`` (None: all, a slice: a view,
        an array: a gather): two (B, H, length, D) arrays."""
        kv = self.layers[i][:, :, :, :length]
        if isinstance(rows, slice):
            kv = kv[:, rows]
        elif rows is not None:
            kv = take_unchecked(kv, rows, 1)  # the engine's own cache rows: no bounds check (no host sync)
        return kv[0], kv[1]

    @property
    def nbytes(self):
        """Bytes the cache occupies, all layers."""
        return sum(a.size * a.dtype.itemsize for a in self.layers)


class _Step:
    """What every block of one forward pass shares: cache, rows, slots, attention mask."""

    def __init__(self, cache, kv_len):
        self.cache, self.kv_len = cache, kv_len
        self.rows = self.slots = self.read_rows = self.mask = None
        self.decode_positions = None  # (B,) slots of a decode step (one token per cache row 0..B-1)


class Block:
    """A pre-LN transformer block: x + attention(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config, index, p):
        self.index = index
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.eps, self.activation = config.layer_norm_epsilon, config.activation
        scale = 1.0 / math.sqrt(config.head_dim) if config.scale_attn_weights else 1.0
        self.scale = scale / (index + 1) if config.scale_attn_by_inverse_layer_idx else scale
        for name in _LAYER_PARAMS:
            setattr(self, name.replace(".", "_"), p[f"h.{index}.{name}"])

    def __call__(self, x, m, step):
        """x + m is the residual stream entering the block (m: the previous block's MLP output, or None); returns
        the pair for the next block, so each residual addition rides on the layer norm and projection after it
        (one kernel per sublayer input in a decode step)."""
        x, qkv = gp.add_layer_norm_linear(x, m, self.ln_1_weight, self.ln_1_bias, self.attn_c_attn_weight,
                                          self.attn_c_attn_bias, eps=self.eps)
        x, h = gp.add_layer_norm_linear(x, self.attention(qkv, step), self.ln_2_weight, self.ln_2_bias,
                                        self.mlp_c_fc_weight, self.mlp_c_fc_bias, self.activation, eps=self.eps)
        return x, gp.linear(h, self.mlp_c_proj_weight, self.mlp_c_proj_bias)

    def attention(self, qkv, step):
        """Causal self-attention of the (B, T, 3C) projections qkv, through the cache when there is one, and the
        output projection."""
        B, T, C3 = qkv.shape
        C = C3 // 3
        if step.decode_positions is not None:  # cache write and attention of a decode step: one fused op
            y = gp.kv_cache_attention(gp.reshape(qkv, (B, 3, self.n_head, self.head_dim)),
                                      step.cache.layers[self.index], step.decode_positions, step.kv_len, self.scale)
            return gp.linear(gp.reshape(y, (B, T, C)), self.attn_c_proj_weight, self.attn_c_proj_bias)
        if step.kv_len is None:  # the new tokens attend each other only: one op from projection to heads' outputs
            if step.cache is not None:
                heads = gp.reshape(qkv, (B, T, 3, self.n_head, self.head_dim))
                step.cache.write(self.index, heads[:, :, 1:], step.rows, step.slots)
            y = gp.self_attention(qkv, self.n_head, causal=True, scale=self.scale)
            return gp.linear(y, self.attn_c_proj_weight, self.attn_c_proj_bias)
        qkv = gp.reshape(qkv, (B, T, 3, self.n_head, self.head_dim))
        step.cache.write(self.index, qkv[:, :, 1:], step.rows, step.slots)
        q = gp.permute_dims(qkv[:, :, 0], (0, 2, 1, 3))  # (B, H, T, D)
        # they attend the cache, where they were just written
        k, v = step.cache.read(self.index, step.kv_len, step.read_rows)
        y = gp.scaled_dot_product_attention(q, k, v, causal=False, mask=step.mask, scale=self.scale)
        y = gp.reshape(gp.permute_dims(y, (0, 2, 1, 3)), (B, T, C))
        return gp.linear(y, self.attn_c_proj_weight, self.attn_c_proj_bias)


class GPT2:
    """GPT-2 language model: token + position embeddings, pre-LN blocks, final layer norm, tied LM head."""

    def __init__(self, config, params, *, device=None, dtype=None):
        """params: Hugging Face names (no prefix) -> arrays in gpk_array's layout (linear weights (out, in))."""
        self.config = config
        self.device = gp.Device(device) if device is not None else gp.default_device()
        self.dtype = np.dtype(gp.float32 if dtype is None else dtype)
        self.wte, self.wpe = params["wte.weight"], params["wpe.weight"]
        self.ln_f_weight, self.ln_f_bias = params["ln_f.weight"], params["ln_f.bias"]
        self.blocks = [Block(config, i, params) for i in range(config.n_layer)]

    # --- loading ---------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, *, device=None, dtype=None, progress=None):
        """Load a model directory (config.json + model.safetensors, or shards listed in
        model.safetensors.index.json). progress: True / False, None for a bar on files over 64 MiB."""
        path = pathlib.Path(path)
        config = GPT2Config.from_json(path / "config.json")
        index = path / "model.safetensors.index.json"
        shards = _shards(path, index) if index.is_file() else ["model.safetensors"]
        files = [SafeTensorsFile(path / s) for s in shards]
        try:
            where = {}
            for f in files:
                for name in f.names():
                    where[name] = f
            total = sum(f.file_size for f in files)
            show = total >= 64 << 20 if progress is None else progress
            bar = _progress_bar(total, f"loading {path.name or path}") if show else None
            return cls.from_weights(config, {n: (lambda n=n: where[n].numpy(n)) for n in where},
                                    device=device, dtype=dtype, bar=bar)
        finally:
            for f in files:
                f.close()

    @classmethod
    def from_weights(cls, config, tensors, *, device=None, dtype=None, bar=None):
        """From Hugging Face-named tensors in Hugging Face's layout: a dict name -> array (NumPy, gpk_array,
        anything gpk_array.asarray takes) or -> a callable returning one (read lazily, one at a time)."""
        device = gp.Device(device) if device is not None else gp.default_device()
        dtype = np.dtype(gp.float32 if dtype is None else dtype)
        if not gp.isdtype(dtype, "real floating"):
            raise TypeError(f"dtype must be a real floating dtype, got {dtype}")
        names = {}
        for name in tensors:
            short = name.removeprefix("transformer.")
            if not short.endswith(_IGNORED):
                names[short] = name
        layers = {int(n.split(".")[1]) for n in names if n.startswith("h.") and n.split(".")[1].isdigit()}
        if config.n_layer > len(layers):  # before listing n_layer layers' names (a config may claim millions)
            raise ValueError(f"the config has n_layer={config.n_layer} but the checkpoint holds {len(layers)} "
                             "transformer layer(s)")
        wanted = hf_param_names(config)
        missing = [n for n in wanted if n not in names]
        if missing:
            raise CheckpointError(f"checkpoint lacks {len(missing)} GPT-2 tensor(s), e.g. {missing[:3]}")
        params = {}
        try:
            for short in wanted:
                t = tensors[names[short]]
                host = t() if callable(t) else t
                a = gp.astype(gp.asarray(host, device=device), dtype)
                if _is_conv1d(short):
                    a = gp.reshape(gp.matrix_transpose(a), (a.shape[1], a.shape[0]), copy=True)
                _check_shape(short, a.shape, config)
                params[short] = a
                if bar is not None:
                    bar.update(getattr(host, "nbytes", 0))
        finally:
            if bar is not None:
                bar.close()
        return cls(config, params, device=device, dtype=dtype)

    def to_hf_weights(self):
        """Parameters as Hugging Face names -> NumPy arrays in Hugging Face's layout (Conv1D weights (in, out))."""
        out = {"wte.weight": self.wte, "wpe.weight": self.wpe, "ln_f.weight": self.ln_f_weight,
               "ln_f.bias": self.ln_f_bias}
        for b in self.blocks:
            for name in _LAYER_PARAMS:
                a = getattr(b, name.replace(".", "_"))
                if _is_conv1d(f"h.{b.index}.{name}"):
                    a = gp.matrix_transpose(a)
                out[f"h.{b.index}.{name}"] = a
        return {n: np.ascontiguousarray(gp.asarray(a).to_device("cpu")) for n, a in out.items()}

    def save_pretrained(self, path):
        """Write the model as a Hugging Face directory at ``path``: ``config.json`` and ``model.safetensors`` (the
        Hugging Face names and layout, ``to_hf_weights``)."""
        save_checkpoint(path, self.config, self.to_hf_weights())

    # --- running ---------------------------------------------------------------------------------------
    def new_cache(self, batch, max_len=None):
        """A zeroed KV cache for ``batch`` sequences of up to ``max_len`` tokens (default: the context length)."""
        return KVCache(self.config, batch, max_len or self.config.n_positions, dtype=self.dtype, device=self.device)

    def __call__(self, tokens, positions=None, **kw):
        return self.forward(tokens, positions, **kw)

    def forward(self, tokens, positions=None, *, cache=None, rows=None, kv_len=None, last=None):
        """Logits for token ids ``tokens`` (B, T); see ``_forward``. A float32 model multiplies in full FP32
        (no TF32), as the reference implementation does, so its logits match it to float32 accuracy."""
        with constant_weights():  # its parameters are written by no kernel of a step (CUDA GEMVs may read ahead)
            if self.dtype == np.float32 and gp.get_float32_matmul_precision() != "highest":
                with gp.float32_matmul_precision("highest"):
                    return self._forward(tokens, positions, cache=cache, rows=rows, kv_len=kv_len, last=last)
            return self._forward(tokens, positions, cache=cache, rows=rows, kv_len=kv_len, last=last)

    def _forward(self, tokens, positions=None, *, cache=None, rows=None, kv_len=None, last=None):
        """Logits for token ids ``tokens`` (B, T).

        positions: (B, T) or (T,) position of each token (default 0..T-1); they select the position embeddings
            and, with a cache, the cache slot each token's keys and values are written to.
        cache: a KVCache to write this step's keys and values into, at cache rows ``rows`` ((B,), default
            0..B-1) and slots ``positions``.
        kv_len: None: the tokens attend each other only (causally); the cache, if any, is only written.
            An int: the tokens attend cache slots [0, kv_len) of their row, those at positions up to their own
            (use it for decoding and for prefill that continues a cached prefix).
        last: (B,) index along T of the one token per row whose logits are wanted (then (B, V) is returned).
        Returns logits (B, T, V) (or (B, V) with ``last``), in the model's dtype.
        """
        dev = self.device
        tokens = gp.asarray(tokens, device=dev)
        B, T = tokens.shape
        own_positions = positions is None
        if own_positions:
            positions = gp.arange(T, device=dev)
        positions = gp.asarray(positions, device=dev)
        x = gp.reshape(gp.take(self.wte, gp.reshape(tokens, (-1,)), axis=0), (B, T, -1))
        flat = gp.reshape(positions, (-1,))
        # positions of our own arange need no CUDA bounds check (its host sync); a caller's are checked
        pos = take_unchecked(self.wpe, flat, 0) if own_positions and T <= self.config.n_positions else \
            gp.take(self.wpe, flat, axis=0)
        x = x + gp.reshape(pos, (-1, T, self.config.n_embd))
        step = _Step(cache, kv_len)
        if cache is not None:
            if rows is None:  # the cache's first B rows: read through a view, no gather
                step.rows = gp.reshape(gp.arange(B, device=dev), (B, 1))
                step.read_rows = None if B == cache.batch else slice(0, B)
            else:
                step.read_rows = gp.asarray(rows, device=dev)
                step.rows = gp.reshape(step.read_rows, (B, 1))
            step.slots = gp.broadcast_to(gp.reshape(positions, (-1, T)), (B, T))
            if kv_len is not None:
                if not 0 < kv_len <= cache.max_len:
                    raise ValueError(f"kv_len must be in [1, {cache.max_len}], got {kv_len}")
                if T == 1 and rows is None:
                    step.decode_positions = gp.reshape(step.slots, (B,))
                else:
                    key_pos = gp.reshape(gp.arange(kv_len, device=dev), (1, 1, 1, kv_len))
                    step.mask = key_pos <= gp.reshape(step.slots, (B, 1, T, 1))
        elif kv_len is not None:
            raise ValueError("kv_len needs a cache")
        m = None
        for block in self.blocks:
            x, m = block(x, m, step)
        eps = self.config.layer_norm_epsilon
        x = gp.layer_norm(x, self.ln_f_weight, self.ln_f_bias, eps) if m is None else gp.add_layer_norm(
            x, m, self.ln_f_weight, self.ln_f_bias, eps)[1]
        if last is not None:
            x = x[gp.arange(B, device=dev), gp.asarray(last, device=dev)]
        return gp.linear(x, self.wte)

    @property
    def num_parameters(self):
        """The number of parameters (the LM head is tied to the token embeddings, so counted once)."""
        n = self.wte.size + self.wpe.size + self.ln_f_weight.size + self.ln_f_bias.size
        return n + sum(getattr(b, p.replace(".", "_")).size for b in self.blocks for p in _LAYER_PARAMS)


def _shards(path, index):
    """The shard files named by a ``model.safetensors.index.json``: each a file inside the model directory."""
    import json
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{index}: not a safetensors index (a JSON object with a 'weight_map'): {e!r}") from None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise ValueError(f"{index}: 'weight_map' must map tensor names to shard file names")
    root = path.resolve()
    shards = sorted(set(weight_map.values()))
    for s in shards:
        if pathlib.PurePath(s).is_absolute() or root not in (root / s).resolve().parents:
            raise ValueError(f"{index}: shard {s!r} is outside the model directory {path}")
    return shards


def _is_conv1d(name):
    """Is ``name`` (no prefix) a Conv1D weight, stored (in_features, out_features) by Hugging Face?"""
    return name.startswith("h.") and name.endswith(".weight") and name.split(".", 2)[2][:-len(".weight")] in _CONV1D


def _check_shape(name, shape, c):
    C, F = c.n_embd, c.inner_dim
    expect = {"wte.weight": (c.vocab_size, C), "wpe.weight": (c.n_positions, C), "attn.c_attn.weight": (3 * C, C),
              "attn.c_attn.bias": (3 * C,), "attn.c_proj.weight": (C, C), "mlp.c_fc.weight": (F, C),
              "mlp.c_fc.bias": (F,), "mlp.c_proj.weight": (C, F)}
    key = name if name in expect else name.split(".", 2)[-1]
    want = expect.get(key, (C,))
    if tuple(shape) != want:
        raise ValueError(f"tensor {name!r} has shape {tuple(shape)} (after transposing Conv1D weights), "
                         f"expected {want} for this config")


# --- checkpoints ---------------------------------------------------------------------------------------


def random_weights(config, seed=0, std=0.02):
    """Random GPT-2 weights in Hugging Face names and layout (float32 NumPy), every parameter non-trivial."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in hf_param_names(config):
        short = name.split(".", 2)[-1] if name.startswith("h.") else name
        if short in ("wte.weight", "wpe.weight"):
            shape = (config.vocab_size if short == "wte.weight" else config.n_positions, config.n_embd)
        else:
            shape = _hf_shape(short, config)
        if short.startswith("ln") and short.endswith(".weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            a = std * rng.standard_normal(shape)
        out[name] = a.astype(np.float32)
    return out


def _hf_shape(short, c):
    C, F = c.n_embd, c.inner_dim
    return {"attn.c_attn.weight": (C, 3 * C), "attn.c_attn.bias": (3 * C,), "attn.c_proj.weight": (C, C),
            "mlp.c_fc.weight": (C, F), "mlp.c_fc.bias": (F,), "mlp.c_proj.weight": (F, C)}.get(short, (C,))


def save_checkpoint(path, config, weights):
    """Write a Hugging Face model directory: config.json and model.safetensors (weights in HF layout)."""
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    config.save(path / "config.json")
    save_file(dict(weights), path / "model.safetensors", metadata={"format": "pt"})


# --- progress ------------------------------------------------------------------------------------------


def _progress_bar(total, desc):
    try:
        from tqdm import tqdm
    except ImportError:
        return _StderrBar(total, desc)
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


class _StderrBar:
    """A minimal progress bar on stderr, for when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.desc, self.done, self.shown = max(total, 1), desc, 0, -1

    def update(self, n):
        self.done += n
        pct = min(100, 100 * self.done // self.total)
        if pct != self.shown:
            self.shown = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\r{self.desc}: [{bar:<25}] {pct:3d}%")
            sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
        sys.stderr.flush()
