"""GPT-2 inference on gpk_array: Hugging Face checkpoints, generation with a KV cache, an OpenAI-compatible server.

A model directory is a Hugging Face GPT-2 one (config.json, model.safetensors, and tokenizer.json or vocab.json +
merges.txt), or one written by ``save_checkpoint``, as here with random weights (small, so that this runs in a
moment on the CPU as on a GPU)::

    import gpk_array
    from gpk_array.llm import GPT2, GPT2Config, generate, random_weights, save_checkpoint

    config = GPT2Config(n_embd=64, n_layer=2, n_head=4)          # GPT-2's vocabulary and context, tiny layers
    save_checkpoint("tiny-gpt2", config, random_weights(config))  # tiny-gpt2/config.json, model.safetensors
    device = gpk_array.default_device()                           # cuda:0 when a GPU is usable, else cpu
    dtype = gpk_array.float16 if device.kind == "cuda" else gpk_array.float32
    model = GPT2.from_pretrained("tiny-gpt2", device=device, dtype=dtype)
    ids = generate(model, [15496, 11, 616, 1438, 318], max_new_tokens=8)  # "Hello, my name is" in GPT-2 ids
    print(ids)                                                    # 8 token ids, greedy (temperature=0)

With tokenizer files in the directory, text goes in and out: ``tok = Tokenizer.from_dir(path)``, then
``generate(model, "Hello, my name is", tokenizer=tok, max_new_tokens=20)``; ``temperature=0.8`` (with ``seed=``)
samples instead. The ``gpk generate`` and ``gpk serve`` commands do the same from the shell.

The server (``gpk_array.llm.server``) needs Starlette and uvicorn; nothing here imports them.
"""
from .config import GPT2Config
from .generate import Engine, SamplingParams, Sequence, TextStream, generate, generate_stream, sample
from .model import GPT2, CheckpointError, KVCache, random_weights, save_checkpoint
from .safetensors import SafeTensorsFile, save_file
from .tokenizer import Tokenizer

__all__ = ["CheckpointError", "Engine", "GPT2", "GPT2Config", "KVCache", "SafeTensorsFile", "SamplingParams",
           "Sequence", "TextStream", "Tokenizer", "generate", "generate_stream", "random_weights", "sample",
           "save_checkpoint", "save_file"]
