"""GPT-2 tokenizer: exact agreement with Hugging Face ``tokenizers`` on the real GPT-2 vocabulary."""
import json
import pathlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpk_array.llm import tokenizer as tokmod
from gpk_array.llm.tokenizer import Tokenizer

DATA = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gpt2-tokenizer"
if not (DATA / "tokenizer.json").is_file():
    pytest.skip(f"GPT-2 tokenizer files not found at {DATA}", allow_module_level=True)

EOT = "<|endoftext|>"
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CORPUS = [
    # English prose, punctuation, contractions (the odd ones and upper case too)
    "Hello, world!",
    " The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged, that a single man in possession of a good fortune "
    "must be in want of a wife.",
    "I'm sure you'll see we've done what they'd said: it's theirs, isn't it? Y'all ain't ready.",
    "IT'S LOUD. WE'RE HERE. THEY'VE GONE. I'M OK. WE'LL SEE. HE'D KNOW. 'S 'T 'RE 'VE 'M 'LL 'D",
    "'s't're've'm'll'd 'x 'sa 'llama rock'n'roll o'clock ''s '''",
    "He said \u201cno\u201d \u2014 twice \u2013 and left\u2026 (really?) [yes] {maybe} <ok> 50% off; #1 @home ~tilde",
    "Mr. O'Neil paid $1,234.56 on 2024-02-29 at 23:59:59.999 for 3.14159e-10 units, i.e. 0x1F.",
    "Numbers: 0 1 12 123 1234 12345 123456 1234567 3.5 -7 +8 1e9 \u00bd \u2153 \u2160\u2161\u2162 \u0663\u0664\u0665 \u0967\u0968",
    # other languages
    "Der schnelle braune Fuchs springt \u00fcber den faulen Hund. Stra\u00dfe, \u00c4rger, \u00f6de.",
    "Le c\u0153ur a ses raisons que la raison ne conna\u00eet point. L'\u00e9t\u00e9 s'en va.",
    "\u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Ma\u00f1ana ser\u00e1 otro d\u00eda!",
    "\u0421\u044a\u0435\u0448\u044c \u0436\u0435 \u0435\u0449\u0451 \u044d\u0442\u0438\u0445 \u043c\u044f\u0433\u043a\u0438\u0445 "
    "\u0444\u0440\u0430\u043d\u0446\u0443\u0437\u0441\u043a\u0438\u0445 \u0431\u0443\u043b\u043e\u043a, \u0434\u0430 "
    "\u0432\u044b\u043f\u0435\u0439 \u0447\u0430\u044e.",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac: \u03be\u03b5\u03c3\u03ba\u03b5\u03c0\u03ac\u03b6\u03c9 "
    "\u03c4\u03b7\u03bd \u03c8\u03c5\u03c7\u03bf\u03c6\u03b8\u03cc\u03c1\u03b1 \u03b2\u03b4\u03b5\u03bb\u03c5\u03b3\u03bc\u03af\u03b1.",
    "\u6211\u80fd\u541e\u4e0b\u73bb\u7483\u800c\u4e0d\u4f24\u8eab\u4f53\u3002\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c"
    "\u6211\u4eec\u53bb\u516c\u56ed\u5427\uff01",
    "\u79c1\u306f\u30ac\u30e9\u30b9\u3092\u98df\u3079\u3089\u308c\u307e\u3059\u3002\u305d\u308c\u306f\u79c1\u3092"
    "\u50b7\u3064\u3051\u307e\u305b\u3093\u3002\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3001\uff21\uff22\uff23\uff11\uff12\uff13",
    "\ub098\ub294 \uc720\ub9ac\ub97c \uba39\uc744 \uc218 \uc788\uc5b4\uc694. \uadf8\ub798\ub3c4 \uc544\ud504\uc9c0 "
    "\uc54a\uc544\uc694.",
    "\u0623\u0646\u0627 \u0642\u0627\u062f\u0631 \u0639\u0644\u0649 \u0623\u0643\u0644 \u0627\u0644\u0632\u062c\u0627\u062c "
    "\u0648 \u0647\u0630\u0627 \u0644\u0627 \u064a\u0624\u0644\u0645\u0646\u064a. \u0661\u0662\u0663",
    "\u05d0\u05e0\u05d9 \u05d9\u05db\u05d5\u05dc \u05dc\u05d0\u05db\u05d5\u05dc \u05d6\u05db\u05d5\u05db\u05d9\u05ea "
    "\u05d5\u05d6\u05d4 \u05dc\u05d0 \u05de\u05d6\u05d9\u05e7 \u05dc\u05d9.",
    "\u092e\u0948\u0902 \u0915\u093e\u0901\u091a \u0916\u093e \u0938\u0915\u0924\u093e \u0939\u0942\u0901 "
    "\u0914\u0930 \u092e\u0941\u091d\u0947 \u0909\u0938\u0938\u0947 \u0915\u094b\u0908 \u091a\u094b\u091f "
    "\u0928\u0939\u0940\u0902 \u092a\u0939\u0941\u0902\u091a\u0924\u0940\u0964 \u0967\u0968\u0969",
    "\u0e09\u0e31\u0e19\u0e01\u0e34\u0e19\u0e01\u0e23\u0e30\u0e08\u0e01\u0e44\u0e14\u0e49 \u0e41\u0e15\u0e48"
    "\u0e21\u0e31\u0e19\u0e44\u0e21\u0e48\u0e17\u0e33\u0e43\u0e2b\u0e49\u0e09\u0e31\u0e19\u0e40\u0e08\u0e47\u0e1a",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u: \u0111\u01b0\u1eddng ph\u1ed1 H\u00e0 N\u1ed9i. T\u00fcrk\u00e7e: "
    "\u0131\u015f\u0131k \u0130stanbul \u011f\u00fc\u015f.",
    "Combining: e\u0301 a\u0308 n\u0303 \u0915\u093f \u0627\u064e \u1100\u1161\u11a8 Z\u0351\u036b\u0343\u036a\u0302a\u0310l\u0357go",
    # code
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\nreturn sum;  // dot product\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
    "const f = async (x) => { await fetch(`/api/${x}`); return x?.y ?? null; };\n",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%smith%' ORDER BY id DESC;\n",
    "#include <stdio.h>\nint main(void){printf(\"%d\\n\", 42);return 0;}\n",
    "<html><body class=\"main\"><p>Hi &amp; bye</p></body></html>\n",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}\n",
    "$ ls -la | grep '^d' && echo \"done\" >> /tmp/log.txt 2>&1\n",
    "x = lambda *args, **kwargs: (args, kwargs)  # noqa: E731\r\n",
    # whitespace
    "a  b   c    d\t\te\n\nf\r\ng\u00a0h\u3000i\u2028j\u2029k\x0bl\x0cm\x85n",
    "trailing spaces   ",
    "   leading spaces",
    "\n\n\n",
    "  \n  \n\t\n",
    " ",
    "",
    "line1\n    indented\n\tTabbed\n        \n\nend",
    "x" + " " * 40 + "y" + "\t" * 9 + "z" + "\n" * 7,
    # emoji and symbols
    "I \u2764\ufe0f \U0001f355 and \U0001f680! \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 "
    "\U0001f3f3\ufe0f\u200d\U0001f308 \U0001f44d\U0001f3fd \U0001f1fa\U0001f1f8 \U0001f1ef\U0001f1f5",
    "\u2200x\u2208\u211d: x\u00b2 \u2265 0 \u2211\u221e \u222b\u03c0 \u00a9\u00ae\u2122 \u2190\u2192\u2191\u2193 \u266a\u266b",
    "\u0000\u0001\u001f\u007f control \ufeffBOM \u200bzero\u200cwidth\u200djoiners",
    # special tokens
    f"First document.{EOT}Second document.",
    f"{EOT}",
    f"{EOT}{EOT} starts and ends {EOT}",
    f"almost special <|endoftext| and <|endoftext|>> and < |endoftext|> and {EOT[:-1]}",
    f"word{EOT}word {EOT} spaced\n{EOT}\n",
    # Unicode 17.0 letters/digits, which tokenizers' regex engine does not know
    "\u088f\u0c5c abc \U00010940\U00010941 def \U000323b0\U000323b1 12\U00011de0",
]


@pytest.fixture(scope="module")
def ours():
    return Tokenizer.from_file(DATA / "tokenizer.json")


@pytest.fixture(scope="module")
def hf():
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(DATA / "tokenizer.json"))


def _corpus():
    """The hand-written samples, plus random concatenations of them."""
    rng = random.Random(0)
    glue = ["", " ", "\n", "  ", "\t", "'s", EOT]
    mixed = ["".join(rng.choice(CORPUS) + rng.choice(glue) for _ in range(rng.randint(2, 6))) for _ in range(200)]
    return CORPUS + mixed


def test_known_encodings(ours):
    assert ours.encode("Hello, world!") == [15496, 11, 995, 0]
    assert ours.encode(" The quick brown fox jumps over the lazy dog.") == [383, 2068, 7586, 21831, 18045, 625,
                                                                             262, 16931, 3290, 13]


def test_corpus_matches_tokenizers(ours, hf):
    texts = _corpus()
    expected = [e.ids for e in hf.encode_batch(texts)]
    for text, want in zip(texts, expected):
        assert ours.encode(text) == want, text
        assert ours.decode(want) == text
    assert ours.encode_batch(texts) == expected


def test_corpus_as_one_text(ours, hf):
    text = "\n".join(_corpus())
    assert ours.encode(text) == hf.encode(text).ids


def test_vocab_merges_form_matches_json_form(ours):
    other = Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")
    assert other.vocab_size == ours.vocab_size == 50257
    assert other.eos_token_id == ours.eos_token_id == 50256
    for text in CORPUS:
        assert other.encode(text) == ours.encode(text)


def test_from_dir(tmp_path):
    assert Tokenizer.from_dir(DATA).encode(f"a{EOT}b") == [64, 50256, 65]
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    assert Tokenizer.from_dir(tmp_path).encode("Hello, world!") == [15496, 11, 995, 0]
    (tmp_path / "merges.txt").unlink()
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        Tokenizer.from_dir(tmp_path)


def test_vocabulary_accessors(ours, hf):
    assert ours.vocab_size == hf.get_vocab_size()
    assert ours.eos_token_id == 50256
    assert ours.token_to_id(EOT) == 50256
    assert ours.token_to_id("\u0120the") == 262 == hf.token_to_id("\u0120the")
    assert ours.token_to_id("not a token") is None
    assert ours.id_to_token(262) == "\u0120the"
    assert ours.id_to_token(50256) == EOT
    assert ours.id_to_token(50257) is None


def test_decode(ours, hf):
    ids = ours.encode(f"caf\u00e9 {EOT} \U0001f600")
    assert ours.decode(ids) == f"caf\u00e9 {EOT} \U0001f600"
    assert ours.decode(ids, skip_special_tokens=True) == hf.decode(ids) == "caf\u00e9  \U0001f600"
    emoji = ours.encode("\U0001f600")
    assert len(emoji) > 1
    assert ours.decode(emoji[:1]) == hf.decode(emoji[:1]) == "\ufffd"
    assert ours.decode([]) == ""
    with pytest.raises(ValueError, match="token id 50257 is out of range"):
        ours.decode([1, 50257])
    with pytest.raises(ValueError, match="token id -1 is out of range"):
        ours.decode([-1])


def test_long_pieces_match_tokenizers(ours, hf):
    rng = random.Random(1)
    texts = ["=" * 20000, "ab" * 5000, "".join(rng.choice("abcdefghij") for _ in range(20000)),
             " " * 10000 + "x", "\n" * 5000, "9" * 3000, "\U0001f600" * 2000]
    for text in texts:
        assert ours.encode(text) == hf.encode(text).ids


def test_cache_eviction_keeps_results(monkeypatch, hf):
    monkeypatch.setattr(tokmod, "_CACHE_LIMIT", 4)
    small = Tokenizer.from_file(DATA / "tokenizer.json")
    for text in CORPUS:
        assert small.encode(text) == hf.encode(text).ids
    assert len(small._cache) <= 4


def test_pretokenizer_classes_match_tokenizers():
    """Letter / digit / space / other classes of sampled code points, and every Unicode 17 letter."""
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    code_points = [c for c in range(0, 0x110000, 97) if not 0xD800 <= c < 0xE000]
    code_points += [c for first, last in tokmod._UNICODE_17_LN for c in range(first, last + 1)]
    for start in range(0, len(code_points), 2000):
        # "x" + c joins letters, "1" + c digits, "!" + c other symbols; whitespace joins none
        text = "".join(f"x{c}1{c}!{c}\n" for c in map(chr, code_points[start:start + 2000]))
        ends = [end for _, (_, end) in byte_level.pre_tokenize_str(text)]
        pos, ours = 0, []
        for piece in tokmod._pretokenize(text):
            pos += len(piece)
            ours.append(pos)
        assert ours == ends


def test_malformed_files(tmp_path):
    merges = tmp_path / "merges.txt"
    vocab = tmp_path / "vocab.json"
    vocab.write_text((DATA / "vocab.json").read_text(encoding="utf-8"), encoding="utf-8")
    merges.write_text("#version: 0.2\n\u0120 t\nbad line here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt:3: expected two tokens"):
        Tokenizer.from_vocab_merges(vocab, merges)
    merges.write_text("#version: 0.2\n\u0120 t\nqqq zzz\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merge 1 \('qqq', 'zzz'\): token 'qqq' is not in the vocabulary"):
        Tokenizer.from_vocab_merges(vocab, merges)
    spec = json.loads((DATA / "tokenizer.json").read_text(encoding="utf-8"))
    spec["pre_tokenizer"]["add_prefix_space"] = True
    spec["added_tokens"][0]["lstrip"] = True
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match="unsupported tokenizer options: pre_tokenizer.add_prefix_space, "
                                         "added token '<\\|endoftext\\|>' lstrip"):
        Tokenizer.from_file(path)
    spec["model"]["type"] = "WordPiece"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match="only byte-level BPE"):
        Tokenizer.from_file(path)


# ---- properties ------------------------------------------------------------------------------

_TRICKY = st.sampled_from(list(" \t\n\r\x0b\x0c\x85\xa0\u2028\u3000'sSdDtmlrvea1\u0663\u00e9\u4e2d\U0001f642\u200d!.")
                          + [EOT, "'s", "'ll", "'RE", "\U0001f468\u200d\U0001f469"])


@PROPERTY
@given(st.text())
def test_property_text_matches_tokenizers(ours, hf, text):
    ids = ours.encode(text)
    assert ids == hf.encode(text).ids
    assert ours.decode(ids) == text


@PROPERTY
@given(st.lists(_TRICKY, max_size=40).map("".join))
def test_property_tricky_text_matches_tokenizers(ours, hf, text):
    ids = ours.encode(text)
    assert ids == hf.encode(text).ids
    assert ours.decode(ids) == text


@PROPERTY
@given(st.lists(st.one_of(st.text(max_size=20), st.just(EOT)), max_size=8).map("".join))
def test_property_special_tokens_match_tokenizers(ours, hf, text):
    ids = ours.encode(text)
    assert ids == hf.encode(text).ids
    assert ours.decode(ids) == text


@PROPERTY
@given(st.lists(st.integers(0, 50256), max_size=30))
def test_property_decode_matches_tokenizers(ours, hf, ids):
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)
