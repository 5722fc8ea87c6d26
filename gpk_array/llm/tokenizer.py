"""GPT-2 byte-level BPE tokenizer, compatible with Hugging Face ``tokenizers`` on GPT-2 files.

Encoding: split out special tokens, split the rest with GPT-2's pre-tokenization regex (with the letter,
digit and whitespace classes of Hugging Face ``tokenizers``, shipped in ``_pretokenizer_classes``), map each
piece's UTF-8 bytes to printable characters, then apply BPE merges lowest rank first (leftmost on
ties), caching the ids of every piece seen.

The merge loop is that of ``tokenizers`` (a priority queue of (rank, position) over a linked list of symbols) when
a merge can make a pair of lower rank than itself; otherwise (GPT-2's merges, and any trained in order) the same
merges come out of cheaper loops: one bucket of positions per rank, taken in rank order, and for long pieces of
few distinct symbols (runs of one character) one ``str.replace`` of the whole piece per rank.
"""
import heapq
import itertools
import json
import operator
import pathlib
import re
from collections.abc import Mapping

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


# Token ids index tables (id -> bytes) and are held as code points while merging, so they must be dense, as
# GPT-2's are: at most _ID_SLACK ids unused below the largest, and none above 0x10FFFF.
_ID_SLACK = 1024
_MAX_ID = 0x10FFFF
# The run loop (one str.replace of the whole piece per rank) is tried on pieces of at least _LONG_PIECE bytes, while
# they hold at most _RUN_TOKENS distinct tokens and its work (characters scanned) stays under _RUN_WORK per byte.
_LONG_PIECE = 64
_RUN_TOKENS = 16
_RUN_WORK = 16
# Test hook: when not None, called as _ON_MERGE(loop, symbols, iterations) after the merge loop of each piece, loop
# being "runs" (iterations: replacements, one per rank), "buckets" (positions taken from the rank buckets) or "heap"
# (entries popped from the priority queue); symbols is the count the loop started from.
_ON_MERGE = None

_JSON_KINDS = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def _kind(value):
    """``value``'s kind in error messages, in JSON's words where it is a JSON value."""
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _read_text(path):
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e})") from None


def _read_json(path):
    text = _read_text(path)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON: nested too deeply") from None
    except ValueError as e:  # json.JSONDecodeError, and numbers of too many digits
        raise ValueError(f"{path}: not valid JSON: {e}") from None


def _flag(entry, key, label, default=False):
    """``entry[key]``, a flag of tokenizer.json: true, false, or absent (``default``)."""
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{label}.{key}: expected true or false, got {_kind(value)}")
    return value


def _token_id(value, position):
    """An id for ``decode``: any integer (NumPy's too, anything with ``__index__``) but a bool."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"token id {value!r} at position {position} is a bool, not an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"token id {value!r} at position {position} is not an integer "
                        f"({type(value).__name__})") from None


class _Where:
    """Where the tables came from, for error messages (a file and its field), and the error for a wrong type."""

    def __init__(self, vocab="vocab", special="special_tokens", merges="merges", merge_label=None,
                 type_error=TypeError):
        self.vocab, self.special, self.merges, self.type_error = vocab, special, merges, type_error
        self._merge_label = merge_label

    def merge(self, rank):
        return self._merge_label(rank) if self._merge_label else f"{self.merges}[{rank}]"


def _checked_ids(table, label, type_error, special=False):
    """``table`` (token string -> id) as a dict of ints, or an error naming ``label`` and the entry."""
    if not isinstance(table, Mapping):
        raise type_error(f"{label}: expected a mapping of token strings to ids, got {_kind(table)}")
    out = {}
    for token, token_id in table.items():
        if not isinstance(token, str):
            raise type_error(f"{label}: token {token!r} is not a string")
        if not _is_integer(token_id):
            raise type_error(f"{label}: the id of token {token!r} is {token_id!r}, not an integer")
        if token_id < 0:
            raise ValueError(f"{label}: the id of token {token!r} is negative ({token_id})")
        if special and not token:
            raise ValueError(f"{label}: a special token is the empty string (id {token_id})")
        out[token] = int(token_id)
    try:
        "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        bad = next(t for t in out if not _encodes(t))
        raise ValueError(f"{label}: token {bad!r} holds a lone surrogate, which is not text") from None
    return out


def _encodes(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Tokenizer:
    """Byte-level BPE tokenizer (GPT-2 scheme).

    ``vocab`` maps token strings (in GPT-2's byte-character alphabet) to ids, ``merges`` lists the
    BPE merge pairs by rank, ``special_tokens`` maps literal strings (e.g. ``<|endoftext|>``) to ids;
    they are matched in the raw text before pre-tokenization.

    Ids are non-negative integers, one per token (a special token may share its id with the same string in
    ``vocab``), and dense: at most 1024 of them unused below the largest. Wrong types raise TypeError, bad values
    ValueError; the ``from_*`` constructors raise ValueError for anything malformed in a file, naming the file and
    the field.
    """

    def __init__(self, vocab, merges, special_tokens=None):
        self._setup(vocab, merges, {} if special_tokens is None else special_tokens, _Where())

    @classmethod
    def _build(cls, vocab, merges, special_tokens, where):
        self = cls.__new__(cls)
        self._setup(vocab, merges, special_tokens, where)
        return self

    def _setup(self, vocab, merges, special, where):
        vocab = _checked_ids(vocab, where.vocab, where.type_error)
        special = _checked_ids(special, where.special, where.type_error, special=True)
        id_to_token, source = {}, {}
        for label, table in ((where.vocab, vocab), (where.special, special)):
            for token, token_id in table.items():
                other = id_to_token.setdefault(token_id, token)
                if other != token:
                    elsewhere = "" if source[token_id] == label else f" (of {source[token_id]})"
                    raise ValueError(f"{label}: tokens {other!r}{elsewhere} and {token!r} have the same id {token_id}")
                source.setdefault(token_id, label)
        top = max(id_to_token, default=-1)
        if top >= min(len(id_to_token) + _ID_SLACK, _MAX_ID + 1):
            raise ValueError(f"{source[top]}: token {id_to_token[top]!r} has id {top}, far beyond the "
                             f"{len(id_to_token)} tokens: ids must be dense (at most {_ID_SLACK} unused below the "
                             f"largest, and none above {_MAX_ID})")
        try:
            merges = iter(merges)
        except TypeError:
            raise where.type_error(f"{where.merges}: expected a list of token pairs, got {_kind(merges)}") from None
        ranks = {}
        for rank, pair in enumerate(merges):
            label = where.merge(rank)
            if not isinstance(pair, (tuple, list)):
                raise where.type_error(f"{label}: expected a pair of token strings, got {_kind(pair)}")
            if len(pair) != 2:
                raise ValueError(f"{label}: expected a pair of token strings, got {len(pair)} items")
            left, right = pair
            if not isinstance(left, str) or not isinstance(right, str):
                raise where.type_error(f"{label}: expected a pair of token strings, got {_kind(left)} and "
                                       f"{_kind(right)}")
            for token in (left, right, left + right):
                if token not in vocab:
                    raise ValueError(f"{label}: merge {rank} ({left!r}, {right!r}): token {token!r} is not in the "
                                     f"vocabulary")
            ranks[left, right] = rank  # a repeated pair keeps its last rank, as in HF
        missing = [c for c in _BYTE_CHARS if c not in vocab]
        if missing:
            raise ValueError(f"{where.vocab}: vocabulary lacks {len(missing)} of the 256 byte tokens, "
                             f"e.g. {missing[0]!r}")
        self._vocab, self._special, self._ranks, self._id_to_token = vocab, special, ranks, id_to_token
        self._id_bytes = [b""] * (top + 1)  # unused ids decode to nothing
        for i, token in id_to_token.items():
            self._id_bytes[i] = _token_bytes(token)
        special_ids = set(special.values())
        self._id_bytes_plain = [b"" if i in special_ids else b for i, b in enumerate(self._id_bytes)]
        self._max_token_bytes = max(map(len, self._id_bytes), default=1)
        self._setup_merges()
        self._cache = _PieceCache(self._bpe_piece)
        alternatives = sorted(special, key=len, reverse=True)  # the longest match wins
        self._special_split = (re.compile("(" + "|".join(map(re.escape, alternatives)) + ")").split
                               if alternatives else None)

    def _setup_merges(self):
        """The merge tables, by token id: pair (``left << shift | right``) -> rank, rank -> (left, right, merged),
        and for the run loop, the pair's two characters (``chr`` of the ids) -> (rank, merged's character)."""
        vocab = self._vocab
        shift = self._shift = max(len(self._id_bytes) - 1, 1).bit_length()
        rank_of, by_rank, runs, first_use = {}, {}, {}, {}
        for (left, right), rank in self._ranks.items():
            a, b, merged = vocab[left], vocab[right], vocab[left + right]
            rank_of[a << shift | b] = rank
            by_rank[rank] = a, b, merged
            runs[chr(a) + chr(b)] = rank, chr(merged)
            for token_id in (a, b):
                if first_use.setdefault(token_id, rank) > rank:
                    first_use[token_id] = rank
        self._rank_of, self._by_rank, self._runs = rank_of, by_rank, runs
        # In order when every pair a merged token takes part in ranks after the merge that made it: then merges go
        # in rank order, all of a rank left to right, and the bucket and run loops give the heap loop's result.
        self._in_order = all(first_use.get(merged, rank + 1) > rank for rank, (_, _, merged) in by_rank.items())
        self._to_symbols = {b: chr(vocab[c]) for b, c in enumerate(_BYTE_CHARS)}

    # ---- constructors -------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path):
        """Load a Hugging Face ``tokenizer.json`` holding a GPT-2 style byte-level BPE.

        Raises ValueError, naming the file and the field, for anything malformed or unsupported in it.
        """
        spec = _read_json(path)
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: expected a JSON object at the top level, got {_kind(spec)}")
        model = spec.get("model")
        if not isinstance(model, dict):
            raise ValueError(f"{path}: model: expected an object, got {_kind(model)}"
                             if "model" in spec else f"{path}: model: missing")
        pre = spec.get("pre_tokenizer")
        if pre is not None and not isinstance(pre, dict):
            raise ValueError(f"{path}: pre_tokenizer: expected an object or null, got {_kind(pre)}")
        pre = pre or {}
        if model.get("type") != "BPE" or pre.get("type") != "ByteLevel":
            raise ValueError(f"{path}: only byte-level BPE tokenizers are supported "
                             f"(model {model.get('type')!r}, pre_tokenizer {pre.get('type')!r})")
        added = spec.get("added_tokens")
        if added is None:
            added = []
        elif not isinstance(added, list):
            raise ValueError(f"{path}: added_tokens: expected a list, got {_kind(added)}")
        special, unsupported = {}, {}
        for n, entry in enumerate(added):
            label = f"{path}: added_tokens[{n}]"
            if not isinstance(entry, dict):
                raise ValueError(f"{label}: expected an object, got {_kind(entry)}")
            content, token_id = entry.get("content"), entry.get("id")
            if not isinstance(content, str):
                raise ValueError(f"{label}.content: expected a string, got {_kind(content)}")
            if not _is_integer(token_id):
                raise ValueError(f"{label}.id: expected an integer, got {token_id!r}")
            if special.get(content, token_id) != token_id:
                raise ValueError(f"{label}: {content!r} is added twice, with ids {special[content]} and {token_id}")
            special[content] = token_id
            for flag in ("lstrip", "rstrip", "single_word"):
                unsupported[f"added token {content!r} {flag}"] = _flag(entry, flag, label)
            for flag in ("normalized", "special"):
                _flag(entry, flag, label)
        dropout = model.get("dropout")
        if not (dropout is None or isinstance(dropout, (int, float)) and not isinstance(dropout, bool)):
            raise ValueError(f"{path}: model.dropout: expected a number or null, got {_kind(dropout)}")
        for key in ("continuing_subword_prefix", "end_of_word_suffix", "unk_token"):
            if not isinstance(model.get(key), (str, type(None))):
                raise ValueError(f"{path}: model.{key}: expected a string or null, got {_kind(model[key])}")
        unsupported = {
            "normalizer": spec.get("normalizer") is not None,
            "pre_tokenizer.add_prefix_space": _flag(pre, "add_prefix_space", f"{path}: pre_tokenizer"),
            "pre_tokenizer.use_regex=false": not _flag(pre, "use_regex", f"{path}: pre_tokenizer", True),
            "model.dropout": model.get("dropout") not in (None, 0),
            "model.continuing_subword_prefix": bool(model.get("continuing_subword_prefix")),
            "model.end_of_word_suffix": bool(model.get("end_of_word_suffix")),
            "model.byte_fallback": _flag(model, "byte_fallback", f"{path}: model"),
            "model.ignore_merges": _flag(model, "ignore_merges", f"{path}: model"),
            **unsupported,
        }
        _flag(pre, "trim_offsets", f"{path}: pre_tokenizer")
        _flag(model, "fuse_unk", f"{path}: model")
        bad = [name for name, on in unsupported.items() if on]
        if bad:
            raise ValueError(f"{path}: unsupported tokenizer options: {', '.join(bad)}")
        if "vocab" not in model:
            raise ValueError(f"{path}: model.vocab: missing")
        if not isinstance(model["vocab"], dict):
            raise ValueError(f"{path}: model.vocab: expected an object mapping token strings to ids, "
                             f"got {_kind(model['vocab'])}")
        if "merges" not in model:
            raise ValueError(f"{path}: model.merges: missing")
        merges = model["merges"]
        if not isinstance(merges, list):
            raise ValueError(f"{path}: model.merges: expected a list, got {_kind(merges)}")
        pairs = []
        for rank, merge in enumerate(merges):
            if isinstance(merge, str):  # the older form, "left right"
                merge = merge.split(" ")
                if len(merge) != 2:
                    raise ValueError(f"{path}: model.merges[{rank}]: expected two tokens separated by a space, "
                                     f"got {merges[rank]!r}")
            pairs.append(merge)
        for content, token_id in list(special.items()):
            in_vocab = model["vocab"].get(content)
            if _is_integer(in_vocab) and in_vocab != token_id and 0 <= token_id < 2 ** 32:  # (theirs: a u32)
                # as Hugging Face tokenizers: an added token the model's vocabulary already holds keeps that id
                special[content] = in_vocab
        where = _Where(vocab=f"{path}: model.vocab", special=f"{path}: added_tokens", merges=f"{path}: model.merges",
                       type_error=ValueError)
        return cls._build(model["vocab"], pairs, special, where)

    @classmethod
    def from_vocab_merges(cls, vocab_json, merges_txt):
        """Load GPT-2's ``vocab.json`` (``encoder.json``) and ``merges.txt`` (``vocab.bpe``).

        ``<|endoftext|>`` becomes a special token if the vocabulary holds it. Raises ValueError, naming the file
        and the entry (a merge by its line), for anything malformed in them.
        """
        vocab = _read_json(vocab_json)
        if not isinstance(vocab, dict):
            raise ValueError(f"{vocab_json}: expected a JSON object mapping token strings to ids, got {_kind(vocab)}")
        merges, numbers = [], []
        for number, line in enumerate(_read_text(merges_txt).split("\n"), 1):
            line = line.removesuffix("\r")
            if not line or (number == 1 and line.startswith("#version")):
                continue
            pair = line.split(" ")
            if len(pair) != 2:
                raise ValueError(f"{merges_txt}:{number}: expected two tokens separated by a space, got {line!r}")
            merges.append(pair)
            numbers.append(number)
        eot = "<|endoftext|>"
        special = {eot: vocab[eot]} if eot in vocab else {}
        where = _Where(vocab=str(vocab_json), special=str(vocab_json), merges=str(merges_txt),
                       merge_label=lambda rank: f"{merges_txt}:{numbers[rank]}", type_error=ValueError)
        return cls._build(vocab, merges, special, where)

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

    def token_bytes(self, token_id):
        """The bytes token ``token_id`` stands for (a special token: its text's UTF-8; an unused id: b""), the
        pieces ``decode`` joins before decoding them as UTF-8; ValueError for an id outside the table."""
        if not (isinstance(token_id, int) and not isinstance(token_id, bool) and 0 <= token_id < len(self._id_bytes)):
            raise ValueError(f"token id {token_id!r} is out of range [0, {len(self._id_bytes)})")
        return self._id_bytes[token_id]

    # ---- encoding -----------------------------------------------------------------------------

    def _bpe_piece(self, piece):
        """Ids of one pre-tokenized piece."""
        symbols = piece.encode("utf-8").decode("latin-1").translate(self._to_symbols)  # chr of each byte's id
        if len(symbols) < 2:
            return tuple(map(ord, symbols))
        if not self._in_order:
            return self._merge_heap(list(map(ord, symbols)))
        if len(symbols) >= _LONG_PIECE:
            symbols, done = self._merge_runs(symbols)
            if done:
                return tuple(map(ord, symbols))
        return self._merge_buckets(list(map(ord, symbols)))

    def _merge_runs(self, symbols):
        """Merge a piece (a str, one character per token: ``chr`` of its id) one rank at a time: the lowest rank
        among the pairs of its distinct tokens that occur, all its occurrences at once, left to right
        (``str.replace``), as the merges go when in order. For long runs of one character or pattern, where a few
        ranks merge everything; returns (symbols, done), not done once the piece holds more than _RUN_TOKENS
        distinct tokens or the work passes _RUN_WORK characters scanned per symbol."""
        runs = self._runs
        present = set(symbols)
        start = len(symbols)
        budget = _RUN_WORK * start
        replaced, done = 0, False
        while len(present) <= _RUN_TOKENS and budget > 0:
            budget -= len(present) ** 2
            candidates = sorted(ranked + (x + y,) for x in present for y in present
                                if (ranked := runs.get(x + y)) is not None)
            for _, merged, pair in candidates:
                budget -= len(symbols)
                if pair in symbols:
                    break
            else:
                done = True
                break
            symbols = symbols.replace(pair, merged)
            replaced += 1
            budget -= 3 * len(symbols)
            present.add(merged)
            present.difference_update([c for c in pair if c not in symbols])
        if _ON_MERGE is not None:
            _ON_MERGE("runs", start, replaced)
        return symbols, done

    def _merge_buckets(self, ids):
        """Merge a list of ids, merges in order: a bucket of positions per rank, the buckets taken lowest rank first
        and each left to right (no merge makes a pair of its own rank or lower, so none joins a bucket taken)."""
        rank_of, by_rank, shift = self._rank_of, self._by_rank, self._shift
        n = len(ids)
        buckets = {}
        for i in range(n - 1):
            rank = rank_of.get(ids[i] << shift | ids[i + 1])
            if rank is not None:
                bucket = buckets.get(rank)
                if bucket is None:
                    buckets[rank] = [i]
                else:
                    bucket.append(i)
        order = list(buckets)
        heapq.heapify(order)
        nxt = list(range(1, n + 1))
        prev = list(range(-1, n - 1))
        taken = 0
        while order:
            rank = heapq.heappop(order)
            positions = buckets.pop(rank)
            positions.sort()
            taken += len(positions)
            a, b, merged = by_rank[rank]
            for i in positions:
                if ids[i] != a:  # absorbed (-1), or merged already
                    continue
                j = nxt[i]
                if j == n or ids[j] != b:
                    continue
                ids[i] = merged
                ids[j] = -1
                k = nxt[i] = nxt[j]
                if k != n:
                    prev[k] = i
                    rank = rank_of.get(merged << shift | ids[k])
                    if rank is not None:
                        bucket = buckets.get(rank)
                        if bucket is None:
                            buckets[rank] = [i]
                            heapq.heappush(order, rank)
                        else:
                            bucket.append(i)
                p = prev[i]
                if p >= 0:
                    rank = rank_of.get(ids[p] << shift | merged)
                    if rank is not None:
                        bucket = buckets.get(rank)
                        if bucket is None:
                            buckets[rank] = [p]
                            heapq.heappush(order, rank)
                        else:
                            bucket.append(p)
        if _ON_MERGE is not None:
            _ON_MERGE("buckets", n, taken)
        return tuple(filter((-1).__ne__, ids))

    def _merge_heap(self, ids):
        """Merge a list of ids as ``tokenizers`` does, for any merges: a priority queue of (rank, position) entries
        (``rank << bits | position``), the lowest first, over a linked list of symbols."""
        rank_of, by_rank, shift = self._rank_of, self._by_rank, self._shift
        n = len(ids)
        bits = n.bit_length()
        mask = (1 << bits) - 1
        heap = [rank << bits | i for i in range(n - 1)
                if (rank := rank_of.get(ids[i] << shift | ids[i + 1])) is not None]
        heapq.heapify(heap)
        nxt = list(range(1, n + 1))
        prev = list(range(-1, n - 1))
        popped = 0
        while heap:
            entry = heapq.heappop(heap)
            popped += 1
            i = entry & mask
            a, b, merged = by_rank[entry >> bits]
            if ids[i] != a:  # stale: absorbed, or the pair changed
                continue
            j = nxt[i]
            if j == n or ids[j] != b:
                continue
            ids[i] = merged
            ids[j] = -1
            k = nxt[i] = nxt[j]
            if k != n:
                prev[k] = i
                rank = rank_of.get(merged << shift | ids[k])
                if rank is not None:
                    heapq.heappush(heap, rank << bits | i)
            p = prev[i]
            if p >= 0:
                rank = rank_of.get(ids[p] << shift | merged)
                if rank is not None:
                    heapq.heappush(heap, rank << bits | p)
        if _ON_MERGE is not None:
            _ON_MERGE("heap", n, popped)
        return tuple(filter((-1).__ne__, ids))

    def _encode_ordinary(self, text):
        return list(itertools.chain.from_iterable(map(self._cache.__getitem__, _pretokenize(text))))

    def encode(self, text):
        """Token ids of ``text``; special tokens in the text become their ids.

        Text with a lone surrogate (not Unicode text; ``tokenizers`` refuses it too) raises UnicodeEncodeError
        (a ValueError) giving its position.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, not {type(text).__name__}")
        try:
            if self._special_split is None:
                return self._encode_ordinary(text)
            ids = []
            for n, part in enumerate(self._special_split(text)):
                if n % 2:
                    ids.append(self._special[part])
                elif part:
                    ids += self._encode_ordinary(part)
            return ids
        except UnicodeEncodeError:
            position = re.search("[\ud800-\udfff]", text).start()
            raise UnicodeEncodeError("utf-8", text, position, position + 1, "surrogates not allowed") from None

    def encode_batch(self, texts):
        """``encode`` of each text."""
        return [self.encode(t) for t in texts]

    # ---- decoding -----------------------------------------------------------------------------

    def decode(self, ids, skip_special_tokens=False):
        """Text of token ids; bytes that are not valid UTF-8 (a partial character) become U+FFFD, as in HF.

        Special tokens are kept unless ``skip_special_tokens`` (HF skips them by default), so that
        ``decode(encode(s)) == s``.

        ``ids`` is an iterable (a list, a 1-D NumPy array) of integers: Python ints, NumPy integers, anything with
        ``__index__``. Anything else raises TypeError naming the id and its position: floats (even 2.0), None,
        strings, and bools, which ``tokenizers`` reads as 0 and 1 (``True`` as a token id is a bug more likely
        than not). An id outside the table raises ValueError naming it; ids of the table that no token has (gaps)
        decode to nothing, as in HF.
        """
        table = self._id_bytes_plain if skip_special_tokens else self._id_bytes
        if isinstance(ids, (str, bytes, bytearray)):
            raise TypeError(f"decode takes an iterable of token ids, not {type(ids).__name__}")
        if isinstance(ids, np.ndarray) and ids.ndim == 1:
            ids = ids.tolist()
        else:
            try:
                ids = list(ids)
            except TypeError:
                raise TypeError(f"decode takes an iterable of token ids, not {type(ids).__name__}") from None
        if not {*map(type, ids)} <= {int}:  # NumPy integers, bools, or no integers at all
            ids = [_token_id(value, position) for position, value in enumerate(ids)]
        if ids and (min(ids) < 0 or max(ids) >= len(table)):
            position, bad = next((p, i) for p, i in enumerate(ids) if not 0 <= i < len(table))
            raise ValueError(f"token id {bad} is out of range [0, {len(table)}) (at position {position})")
        return b"".join([table[i] for i in ids]).decode("utf-8", errors="replace")
