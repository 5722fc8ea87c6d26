"""GPT-2 inference on gpk_array: Hugging Face checkpoints, generation with a KV cache, an OpenAI-compatible server.

    from gpk_array.llm import GPT2, Tokenizer, generate
    model = GPT2.from_pretrained("path/to/gpt2", device="cuda:0", dtype=gpk_array.float16)
    tok = Tokenizer.from_dir("path/to/gpt2")
    print(generate(model, "Hello, my name is", tokenizer=tok, max_new_tokens=20))

The server (``gpk_array.llm.server``) needs Starlette and uvicorn; nothing here imports them.
"""
from .config import GPT2Config
from .generate import Engine, SamplingParams, Sequence, TextStream, generate, generate_stream, sample
from .model import GPT2, KVCache, random_weights, save_checkpoint
from .safetensors import SafeTensorsFile, save_file
from .tokenizer import Tokenizer

__all__ = ["Engine", "GPT2", "GPT2Config", "KVCache", "SafeTensorsFile", "SamplingParams", "Sequence", "TextStream",
           "Tokenizer", "generate", "generate_stream", "random_weights", "sample", "save_checkpoint", "save_file"]
