"""An independent reference for the tiny checkpoint: GPT-2's forward pass written out in NumPy float64 from the
safetensors file (Hugging Face layout), with no gpk_array op, plus greedy decoding with OpenAI's / Hugging Face's
penalties and logit_bias applied to those float64 logits."""
import json
import pathlib

import numpy as np

from gpk_array.llm.safetensors import SafeTensorsFile

TINY = pathlib.Path(__file__).parent / "data" / "tiny-gpt2"


class NumpyGPT2:
    """GPT-2 in float64 NumPy: ``logits(ids)`` (T, V), ``log_softmax(ids)``."""

    def __init__(self, path=TINY):
        path = pathlib.Path(path)
        self.cfg = json.loads((path / "config.json").read_text())
        f = SafeTensorsFile(path / "model.safetensors")
        try:
            self.w = {n.removeprefix("transformer."): np.asarray(f.numpy(n), dtype=np.float64) for n in f.names()}
        finally:
            f.close()

    @staticmethod
    def _ln(x, g, b, eps):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * g + b

    @staticmethod
    def _gelu_new(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    def logits(self, ids):
        """(T, V) float64 logits of the token ids."""
        w, c = self.w, self.cfg
        ids = np.asarray(ids, dtype=np.int64)
        T, H, eps = len(ids), c["n_head"], c["layer_norm_epsilon"]
        x = w["wte.weight"][ids] + w["wpe.weight"][:T]
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for i in range(c["n_layer"]):
            p = f"h.{i}."
            h = self._ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
            q, k, v = np.split(h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"], 3, axis=-1)
            D = q.shape[-1] // H
            q, k, v = (a.reshape(T, H, D).transpose(1, 0, 2) for a in (q, k, v))
            s = q @ k.transpose(0, 2, 1) / np.sqrt(D) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            y = (s / s.sum(-1, keepdims=True)) @ v
            y = y.transpose(1, 0, 2).reshape(T, H * D)
            x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            h = self._ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
            m = self._gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
            x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        x = self._ln(x, w["ln_f.weight"], w["ln_f.bias"], eps)
        return x @ w["wte.weight"].T

    def log_softmax(self, ids):
        """(T, V) float64 log-probabilities of the next token after each prefix of ids."""
        z = self.logits(ids)
        m = z.max(-1, keepdims=True)
        return z - (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))

    def greedy(self, prompt, n, *, presence=0.0, frequency=0.0, repetition=1.0, bias=None):
        """n greedy tokens after prompt, each chosen from the float64 logits with OpenAI's presence / frequency
        penalties (over the generated tokens), Hugging Face's repetition penalty (over prompt and generated
        tokens) and a logit bias applied."""
        ids, out = list(prompt), []
        for _ in range(n):
            z = self.logits(ids)[-1].copy()
            if repetition != 1:
                for t in set(ids):
                    z[t] = z[t] / repetition if z[t] > 0 else z[t] * repetition
            for t in set(out):
                z[t] -= out.count(t) * frequency + presence
            for t, b in (bias or {}).items():
                z[t] += b
            nxt = int(np.argmax(z))
            out.append(nxt)
            ids.append(nxt)
        return out


def top(lp_row, k):
    """The k most likely (id, logprob) of a float64 row, decreasing (ties by id)."""
    order = np.lexsort((np.arange(lp_row.size), -lp_row))[:k]
    return [(int(i), float(lp_row[i])) for i in order]
