"""The GPT-2 tokenizer under random input, against Hugging Face ``tokenizers``.

Random text (any Unicode, mixed scripts, whitespace runs, long runs of one character, special tokens) encodes to
``tokenizers``' ids and decodes back; text with a lone surrogate (not text: ``tokenizers`` refuses it) raises
UnicodeEncodeError at its position. Random id lists decode or raise TypeError / ValueError. Random merge tables (in
rank order or not) encode as ``tokenizers`` does. Malformed tokenizer.json, vocab.json and merges.txt files load or
raise ValueError naming the file, nothing else. GPK_FUZZ_EXAMPLES sets the examples per test (200).
"""
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpk_array.llm.tokenizer import Tokenizer

from ..llm.test_tokenizer import DATA, EOT, _bpe_of, _hf_gpt2, _tiny_spec

tokenizers = pytest.importorskip("tokenizers")

FUZZ = settings(max_examples=int(os.environ.get("GPK_FUZZ_EXAMPLES", "200")), deadline=None,
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def hf():
    return _hf_gpt2(tokenizers)


@pytest.fixture(scope="module")
def ours():
    return Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")


# ---- text -----------------------------------------------------------------------------------------------------

SCRIPTS = ["Hello, world", " the", "Gr\u00fc\u00dfe", "\u0421\u044a\u0435\u0448\u044c",
           "\u0395\u03bb\u03bb\u03b7\u03bd", "\u6211\u80fd\u541e\u4e0b", "\u30ac\u30e9\u30b9",
           "\uc720\ub9ac\ub97c", "\u0627\u0644\u0632\u062c\u0627\u062c", "\u05d0\u05e0\u05d9",
           "\u0915\u093e\u0901\u091a", "\u0e01\u0e23\u0e30", "\U0001f642\U0001f468\u200d\U0001f469",
           "123 4.5", "'s 'll 'RE n't", "e\u0301\u0308", "\u00bd\u2160\u0663", "x = f(y)  # z", "\u200b\ufeff\x00"]
SPACES = " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000"
PART = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(max_codepoint=0x17F), max_size=30),
    st.sampled_from(SCRIPTS),
    st.text(st.sampled_from(SPACES), min_size=1, max_size=40),  # whitespace runs
    st.builds(lambda c, n: c * n, st.characters(), st.integers(2, 300)),  # runs of one character
    st.builds(lambda s, n: s * n, st.text(min_size=2, max_size=3), st.integers(2, 100)),  # repeated patterns
    st.sampled_from([EOT, EOT, EOT[:-1], "<|endoftext|" + EOT, " " + EOT + " "]),  # special tokens, and near misses
)
TEXT = st.lists(PART, max_size=8).map("".join)
SURROGATES = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)


@FUZZ
@given(text=TEXT)
def test_text_matches_tokenizers(ours, hf, text):
    ids = ours.encode(text)
    assert ids == hf.encode(text).ids
    assert ours.decode(ids) == text


@FUZZ
@given(before=TEXT, surrogates=SURROGATES, after=st.one_of(TEXT, st.lists(st.one_of(TEXT, SURROGATES)).map("".join)))
def test_lone_surrogates_raise_unicode_error_at_their_position(ours, hf, before, surrogates, after):
    text = before + surrogates + after
    with pytest.raises(Exception):  # noqa: B017 (TypeError, "TextInputSequence must be str")
        hf.encode(text)
    with pytest.raises(UnicodeEncodeError) as info:
        ours.encode(text)
    assert info.value.start == len(before) and info.value.object == text


# ---- ids ------------------------------------------------------------------------------------------------------

ID = st.one_of(
    st.integers(0, 50256), st.integers(0, 50256), st.integers(50250, 50260), st.integers(-2**70, 2**70),
    st.builds(np.int64, st.integers(-2**63, 2**63 - 1)), st.builds(np.uint16, st.integers(0, 2**16 - 1)),
    st.builds(np.int32, st.integers(0, 50256)),
    st.booleans(), st.just(np.True_), st.floats(), st.builds(np.float32, st.floats(width=32)), st.none(),
    st.text(max_size=2), st.lists(st.integers(0, 9), max_size=2),
)


def _is_id(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@FUZZ
@given(ids=st.lists(ID, max_size=12), skip=st.booleans(), as_array=st.booleans())
def test_random_ids_decode_or_raise_type_or_value_error(ours, hf, ids, skip, as_array):
    integers = all(_is_id(i) for i in ids)
    in_range = integers and all(0 <= i < 50257 for i in ids)
    arg = np.array(ids, dtype=np.int64) if as_array and in_range else ids
    try:
        text = ours.decode(arg, skip_special_tokens=skip)
    except TypeError as e:
        assert not integers
        assert "at position" in str(e)
    except ValueError as e:
        assert integers and not in_range
        assert "is out of range [0, 50257) (at position" in str(e)
    else:
        assert in_range
        assert text == hf.decode([int(i) for i in ids], skip_special_tokens=skip)


# ---- merge tables ---------------------------------------------------------------------------------------------

@FUZZ
@given(data=st.data(), picks=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=40),
       shuffle=st.booleans(),
       text=st.lists(st.one_of(st.text("abc ", max_size=30),
                               st.builds(lambda s, n: s * n, st.text("abc", min_size=1, max_size=3),
                                         st.integers(1, 120))), max_size=5).map("".join))
def test_random_merge_tables_match_tokenizers(data, picks, shuffle, text):
    """Merges built from the tokens made so far are in rank order (the bucket and run loops); shuffled, often not
    (the heap loop). Long runs of a few letters go through the run loop."""
    tokens, merges = ["a", "b", "c"], []
    for i, j in picks:
        left, right = tokens[i % len(tokens)], tokens[j % len(tokens)]
        merges.append((left, right))  # a repeated pair keeps its last rank
        if left + right not in tokens:
            tokens.append(left + right)
    if shuffle:
        merges = data.draw(st.permutations(merges))
    ours, theirs = _bpe_of(tokens, merges)
    event("merges in rank order" if ours._in_order else "merges out of rank order")
    assert ours.encode(text) == theirs.encode(text).ids
    assert ours.decode(ours.encode(text)) == text


# ---- malformed files ------------------------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.integers(-3, 1400) | st.floats()
    | st.text(max_size=6) | st.sampled_from(["h e", "he", "h", "\u0120 t", "h e x", EOT, "BPE", "ByteLevel", "\ud800"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8)
DELETE = object()
PATHS = [(), ("model",), ("model", "type"), ("model", "vocab"), ("model", "vocab", "he"), ("model", "vocab", "!"),
         ("model", "vocab", "new"), ("model", "vocab", EOT), ("model", "merges"), ("model", "merges", 0),
         ("model", "merges", 2), ("model", "merges", 1, 0), ("model", "dropout"), ("model", "byte_fallback"),
         ("added_tokens",), ("added_tokens", 0), ("added_tokens", 0, "id"), ("added_tokens", 0, "content"),
         ("added_tokens", 0, "lstrip"), ("added_tokens", 1), ("pre_tokenizer",), ("pre_tokenizer", "type"),
         ("pre_tokenizer", "add_prefix_space"), ("pre_tokenizer", "use_regex"), ("normalizer",)]
MUTATIONS = st.lists(st.tuples(st.sampled_from(PATHS), JSONISH | st.just(DELETE)), min_size=1, max_size=3)


def _mutate(spec, mutations):
    for path, value in mutations:
        if not path:
            spec = value if value is not DELETE else {}
            continue
        node = spec
        try:
            for key in path[:-1]:
                node = node[key]
            if value is DELETE:
                del node[path[-1]]
            elif isinstance(node, list) and path[-1] >= len(node):
                node.append(value)
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation took the path away
    return spec


def _load_or_value_error(load, *paths):
    """``load()``, or None where it raised ValueError naming one of ``paths``; any other error fails."""
    try:
        return load()
    except ValueError as e:
        assert any(str(e).startswith(f"{p}") for p in paths), str(e)
        event("ValueError")
        return None


SAMPLE = f" the theme{EOT}hehe \u00e9!"


@FUZZ
@given(mutations=MUTATIONS)
def test_malformed_tokenizer_json_loads_or_raises_value_error(tmp_path_factory, mutations):
    spec = _mutate(_tiny_spec(), mutations)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    tok = _load_or_value_error(lambda: Tokenizer.from_file(path), path)
    if tok is None:
        return
    ids = tok.encode(SAMPLE)
    assert tok.decode(ids) == SAMPLE
    try:
        theirs = tokenizers.Tokenizer.from_file(str(path))
    except Exception:  # noqa: BLE001 (ours may load what theirs refuses)
        event("loads, not in tokenizers")
        return
    event("loads, in tokenizers too")
    assert ids == theirs.encode(SAMPLE).ids


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
       cut=st.none() | st.integers(0, 10_000))
def test_corrupted_tokenizer_json_loads_or_raises_value_error(tmp_path_factory, flips, cut):
    raw = bytearray(json.dumps(_tiny_spec(), ensure_ascii=False).encode("utf-8"))
    for position, byte in flips:
        raw[position % len(raw)] = byte
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    path.write_bytes(bytes(raw[:cut] if cut is not None else raw))
    tok = _load_or_value_error(lambda: Tokenizer.from_file(path), path)
    if tok is not None:
        assert tok.decode(tok.encode(SAMPLE)) == SAMPLE


MERGE_LINE = st.one_of(st.sampled_from(["\u0120 t", "h e", "\u0120t he", "h  e", "he", "a b c", "#version: 0.2",
                                        "q z", "", " ", "h e\r", "\u0085"]),
                       st.text(st.sampled_from("\u0120the xq\r"), max_size=6))


@FUZZ
@given(vocab_mutations=st.lists(st.tuples(st.sampled_from([(), ("he",), ("!",), ("new",), (EOT,)]),
                                          JSONISH | st.just(DELETE)), max_size=2),
       lines=st.lists(MERGE_LINE, max_size=5))
def test_malformed_vocab_merges_load_or_raise_value_error(tmp_path_factory, vocab_mutations, lines):
    vocab = _mutate(_tiny_spec()["model"]["vocab"], vocab_mutations)
    folder = tmp_path_factory.mktemp("tok")
    vocab_json, merges_txt = folder / "vocab.json", folder / "merges.txt"
    vocab_json.write_text(json.dumps(vocab), encoding="utf-8")
    merges_txt.write_text("\n".join(lines), encoding="utf-8")
    tok = _load_or_value_error(lambda: Tokenizer.from_vocab_merges(vocab_json, merges_txt), vocab_json, merges_txt)
    if tok is not None:
        assert tok.decode(tok.encode(SAMPLE)) == SAMPLE
