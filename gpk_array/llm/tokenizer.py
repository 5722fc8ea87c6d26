"""GPT-2 byte-level BPE tokenizer, compatible with Hugging Face ``tokenizers`` on GPT-2 files.

Encoding: split out special tokens, split the rest with GPT-2's pre-tokenization regex (with the letter,
digit and whitespace classes of Hugging Face ``tokenizers``, shipped in ``_pretokenizer_classes``), map each
piece's UTF-8 bytes to printable characters, then apply BPE merges lowest rank first (leftmost on
ties), caching the ids of every piece seen.
"""
import heapq
import itertools
import json
import pathlib
import re

import numpy as np

from . import _pretokenizer_classes as _classes

# GPT-2's pre-tokenizer: English contractions, letters, digits, other symbols (each optionally led by
# one space), then whitespace runs, leaving the last space of a run to lead the following word.
_GPT2_PATTERN = r"'(?:[stmd]|re|ve|ll)| ?{L}+| ?{N}+| ?{O}+|\s+(?!\S)|\s+"
_ASCII_PATTERN = _GPT2_PATTERN.format(L="[A-Za-z]", N="[0-9]", O=r"[^\sA-Za-z0-9]")
# ASCII text, with the standard `re` module; \s is [ \t\n\r\f\v] there, as in Hugging Face `tokenizers`
_PRETOKENIZE_ASCII = re.compile(_ASCII_PATTERN, re.ASCII)
_PRETOKENIZE_BYTES = re.compile(_ASCII_PATTERN.encode("ascii"))


def _stand_in_table():
    """code point -> ASCII byte that the pattern treats alike: itself for ASCII, else "a" for letters, "0" for
    digits, a tab for whitespace, "!" for other symbols (code points past the table's end are other symbols).

    The classes are those of Hugging Face `tokenizers` (Unicode 16.0), generated from it, so the split does not
    depend on the Unicode version of any regular-expression module here. None of the stand-ins is an apostrophe,
    a space or a letter of the contractions, the only characters the pattern tells apart within a class.
    """
    runs = sorted((first, last, ord(stand_in)) for stand_in, ranges in (
        ("a", _classes.LETTER), ("0", _classes.DIGIT), ("\t", _classes.SPACE)) for first, last in ranges)
    values, lengths, end = [], [], 0
    for first, last, value in runs:
        values += [ord("!"), value]
        lengths += [first - end, last + 1 - first]
        end = last + 1
    table = np.repeat(np.array(values + [ord("!")], np.uint8), lengths + [1])
    table[:128] = np.arange(128, dtype=np.uint8)
    return table


_STAND_IN = _stand_in_table()


def _pretokenize(text):
    """Split text into pieces as GPT-2 (and Hugging Face ``tokenizers``) does."""
    if text.isascii():
        return _PRETOKENIZE_ASCII.findall(text)
    return _pretokenize_stand_ins(text)


def _pretokenize_stand_ins(text):
    """``_pretokenize`` of any text: split its stand-ins (one byte per code point), cut the text alike."""
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    stand_ins = _STAND_IN.take(code_points, mode="clip").tobytes()
    pieces, start = [], 0
    for piece in _PRETOKENIZE_BYTES.findall(stand_ins):
        end = start + len(piece)
        pieces.append(text[start:end])
        start = end
    return pieces


_CACHE_LIMIT = 1 << 17  # pieces kept in the per-tokenizer cache before it is emptied


def _byte_chars():
    """GPT-2's byte -> character table: printable Latin-1 bytes map to themselves, the others to 256+."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    for extra, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(256 + extra)
    return [chars[b] for b in range(256)]


_BYTE_CHARS = _byte_chars()
_BYTE_OF_CHAR = {c: b for b, c in enumerate(_BYTE_CHARS)}
# str.translate table from Latin-1-decoded UTF-8 bytes to the byte characters above
_TO_BYTE_CHARS = {b: c for b, c in enumerate(_BYTE_CHARS) if chr(b) != c}


def _token_bytes(token):
    """Bytes of a token: its characters read back as bytes, else (special tokens) its UTF-8, as in HF."""
    try:
        return bytes(_BYTE_OF_CHAR[c] for c in token)
    except KeyError:
        return token.encode("utf-8")


class _PieceCache(dict):
    """piece -> tuple of ids; misses run BPE (``dict.__getitem__`` calls ``__missing__``)."""

    def __init__(self, bpe):
        super().__init__()
        self._bpe = bpe

    def __missing__(self, piece):
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        ids = self[piece] = self._bpe(piece)
        return ids


class Tokenizer:
    """Byte-level BPE tokenizer (GPT-2 scheme).

    ``vocab`` maps token strings (in GPT-2's byte-character alphabet) to ids, ``merges`` lists the
    BPE merge pairs by rank, ``special_tokens`` maps literal strings (e.g. ``<|endoftext|>``) to ids;
    they are matched in the raw text before pre-tokenization.
    """

    def __init__(self, vocab, merges, special_tokens=None):
        self._vocab = dict(vocab)
        self._special = dict(special_tokens or {})
        self._ranks = {}
        for rank, (left, right) in enumerate(merges):
            for token in (left, right, left + right):
                if token not in self._vocab:
                    raise ValueError(f"merge {rank} ({left!r}, {right!r}): token {token!r} is not in the vocabulary")
            self._ranks[left, right] = rank  # a repeated pair keeps its last rank, as in HF
        missing = [c for c in _BYTE_CHARS if c not in self._vocab]
        if missing:
            raise ValueError(f"vocabulary lacks {len(missing)} of the 256 byte tokens, e.g. {missing[0]!r}")
        self._id_to_token = {**{i: t for t, i in self._vocab.items()}, **{i: t for t, i in self._special.items()}}
        if min(self._id_to_token, default=0) < 0:
            raise ValueError("token ids must be non-negative")
        self._id_bytes = [b""] * (max(self._id_to_token, default=-1) + 1)  # unused ids decode to nothing
        for i, token in self._id_to_token.items():
            self._id_bytes[i] = _token_bytes(token)
        special_ids = set(self._special.values())
        self._id_bytes_plain = [b"" if i in special_ids else b for i, b in enumerate(self._id_bytes)]
        self._max_token_bytes = max(map(len, self._id_bytes), default=1)
        self._cache = _PieceCache(self._bpe_piece)
        alternatives = sorted(self._special, key=len, reverse=True)  # the longest match wins
        self._special_split = (re.compile("(" + "|".join(map(re.escape, alternatives)) + ")").split
                               if alternatives else None)

    # ---- constructors -------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path):
        """Load a Hugging Face ``tokenizer.json`` holding a GPT-2 style byte-level BPE."""
        spec = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        model = spec.get("model") or {}
        pre = spec.get("pre_tokenizer") or {}
        if model.get("type") != "BPE" or pre.get("type") != "ByteLevel":
            raise ValueError(f"{path}: only byte-level BPE tokenizers are supported "
                             f"(model {model.get('type')!r}, pre_tokenizer {pre.get('type')!r})")
        unsupported = {
            "normalizer": spec.get("normalizer") is not None,
            "pre_tokenizer.add_prefix_space": pre.get("add_prefix_space", False),
            "pre_tokenizer.use_regex=false": not pre.get("use_regex", True),
            "model.dropout": model.get("dropout") not in (None, 0, 0.0),
            "model.continuing_subword_prefix": bool(model.get("continuing_subword_prefix")),
            "model.end_of_word_suffix": bool(model.get("end_of_word_suffix")),
            "model.byte_fallback": bool(model.get("byte_fallback")),
            "model.ignore_merges": bool(model.get("ignore_merges")),
        }
        for added in spec.get("added_tokens") or []:
            for flag in ("lstrip", "rstrip", "single_word"):
                unsupported[f"added token {added['content']!r} {flag}"] = bool(added.get(flag))
        bad = [name for name, on in unsupported.items() if on]
        if bad:
            raise ValueError(f"{path}: unsupported tokenizer options: {', '.join(bad)}")
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model.get("merges", [])]
        special = {t["content"]: t["id"] for t in spec.get("added_tokens") or []}
        return cls(model["vocab"], merges, special)

    @classmethod
    def from_vocab_merges(cls, vocab_json, merges_txt):
        """Load GPT-2's ``vocab.json`` (``encoder.json``) and ``merges.txt`` (``vocab.bpe``).

        ``<|endoftext|>`` becomes a special token if the vocabulary holds it.
        """
        vocab = json.loads(pathlib.Path(vocab_json).read_text(encoding="utf-8"))
        merges = []
        lines = pathlib.Path(merges_txt).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line or (number == 1 and line.startswith("#version")):
                continue
            pair = line.split(" ")
            if len(pair) != 2:
                raise ValueError(f"{merges_txt}:{number}: expected two tokens separated by a space, got {line!r}")
            merges.append(tuple(pair))
        eot = "<|endoftext|>"
        special = {eot: vocab[eot]} if eot in vocab else {}
        return cls(vocab, merges, special)

    @classmethod
    def from_dir(cls, directory):
        """Load ``tokenizer.json`` from a directory, else its ``vocab.json`` and ``merges.txt``."""
        directory = pathlib.Path(directory)
        if (directory / "tokenizer.json").is_file():
            return cls.from_file(directory / "tokenizer.json")
        if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
            return cls.from_vocab_merges(directory / "vocab.json", directory / "merges.txt")
        raise FileNotFoundError(f"{directory}: no tokenizer.json, nor vocab.json with merges.txt")

    # ---- vocabulary ---------------------------------------------------------------------------

    @property
    def vocab_size(self):
        """Number of tokens, special tokens included."""
        return len(self._id_to_token)

    @property
    def eos_token_id(self):
        """Id of ``<|endoftext|>``, or None."""
        return self.token_to_id("<|endoftext|>")

    @property
    def max_token_bytes(self):
        """Bytes of the longest token (special tokens included): a text of n UTF-8 bytes (so of at most n
        characters) encodes to at least n / max_token_bytes tokens, since the tokens' bytes add up to the text's."""
        return self._max_token_bytes

    def token_to_id(self, token):
        """Id of a token string (byte-character alphabet or special token), or None."""
        return self._special.get(token, self._vocab.get(token))

    def id_to_token(self, token_id):
        """Token string of an id, or None."""
        return self._id_to_token.get(token_id)

    # ---- encoding -----------------------------------------------------------------------------

    def _bpe_piece(self, piece):
        """Ids of one pre-tokenized piece."""
        symbols = list(piece.encode("utf-8").decode("latin-1").translate(_TO_BYTE_CHARS))
        vocab = self._vocab
        return tuple(vocab[s] for s in self._merge(symbols))

    def _merge(self, symbols):
        """Apply merges to a list of symbols: lowest rank first, leftmost first among equal ranks."""
        ranks = self._ranks
        heap = [(ranks[pair], i) for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in ranks]
        if not heap:
            return symbols
        heapq.heapify(heap)
        n = len(symbols)
        nxt = list(range(1, n + 1))
        prev = list(range(-1, n - 1))
        while heap:
            rank, i = heapq.heappop(heap)
            j = nxt[i]
            # stale entries: i was absorbed, or its pair changed (ranks identify pairs uniquely)
            if symbols[i] is None or j == n or ranks.get((symbols[i], symbols[j])) != rank:
                continue
            symbols[i] += symbols[j]
            symbols[j] = None
            k = nxt[i] = nxt[j]
            if k != n:
                prev[k] = i
                r = ranks.get((symbols[i], symbols[k]))
                if r is not None:
                    heapq.heappush(heap, (r, i))
            p = prev[i]
            if p >= 0:
                r = ranks.get((symbols[p], symbols[i]))
                if r is not None:
                    heapq.heappush(heap, (r, p))
        return [s for s in symbols if s is not None]

    def _encode_ordinary(self, text):
        return list(itertools.chain.from_iterable(map(self._cache.__getitem__, _pretokenize(text))))

    def encode(self, text):
        """Token ids of ``text``; special tokens in the text become their ids."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, not {type(text).__name__}")
        if self._special_split is None:
            return self._encode_ordinary(text)
        ids = []
        for n, part in enumerate(self._special_split(text)):
            if n % 2:
                ids.append(self._special[part])
            elif part:
                ids += self._encode_ordinary(part)
        return ids

    def encode_batch(self, texts):
        """``encode`` of each text."""
        return [self.encode(t) for t in texts]

    # ---- decoding -----------------------------------------------------------------------------

    def decode(self, ids, skip_special_tokens=False):
        """Text of token ids; bytes that are not valid UTF-8 (a partial character) become U+FFFD, as in HF.

        Special tokens are kept unless ``skip_special_tokens`` (HF skips them by default), so that
        ``decode(encode(s)) == s``.
        """
        table = self._id_bytes_plain if skip_special_tokens else self._id_bytes
        ids = list(ids)
        if ids and (min(ids) < 0 or max(ids) >= len(table)):
            bad = next(i for i in ids if not 0 <= i < len(table))
            raise ValueError(f"token id {bad} is out of range [0, {len(table)})")
        return b"".join([table[i] for i in ids]).decode("utf-8", errors="replace")
