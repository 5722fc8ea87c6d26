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
    "'s't're've'm'll'd 'x 'sa 'llama rock'n'roll o'clock ''s ''' it’s don’t",
    "He said “no” — twice – and left… (really?) [yes] {maybe} <ok> 50% off; #1 @home ~tilde",
    "Mr. O'Neil paid $1,234.56 on 2024-02-29 at 23:59:59.999 for 3.14159e-10 units, i.e. 0x1F.",
    "Numbers: 0 1 12 123 1234 12345 123456 1234567 3.5 -7 +8 1e9 ½ ⅓ ⅠⅡⅢ ٣٤٥ १२ ²³ ①②",
    # other languages
    "Der schnelle braune Fuchs springt über den faulen Hund. Straße, Ärger, öde.",
    "Le cœur a ses raisons que la raison ne connaît point. L'été s'en va.",
    "¿Dónde está la biblioteca? ¡Mañana será otro día!",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ελληνικά: ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "我能吞下玻璃而不伤身体。今天天气很好，我们去公园吧！",
    "私はガラスを食べられます。それは私を傷つけません。カタカナとひらがな、ＡＢＣ１２３",
    "나는 유리를 먹을 수 있어요. 그래도 아프지 않아요.",
    "أنا قادر على أكل الزجاج و هذا لا يؤلمني. ١٢٣",
    "אני יכול לאכול זכוכית וזה לא מזיק לי.",
    "मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती। १२३",
    "ฉันกินกระจกได้ แต่มันไม่ทำให้ฉันเจ็บ",
    "Tiếng Việt có dấu: đường phố Hà Nội. Türkçe: ışık İstanbul ğüş.",
    "Combining: e\u0301 a\u0308 n\u0303 कि اَ \u1100\u1161\u11a8 Z\u0351\u036b\u0343\u036a\u0302a\u0310l\u0357go",
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
    "a  b   c    d\t\te\n\nf\r\ng\u00a0h\u3000i\u2028j\u2029k\x0bl\x0cm\x85n\x1co\x1fp",
    "trailing spaces   ",
    "   leading spaces",
    "\n\n\n",
    "  \n  \n\t\n",
    " ",
    "",
    "line1\n    indented\n\tTabbed\n        \n\nend",
    "x" + " " * 40 + "y" + "\t" * 9 + "z" + "\n" * 7,
    # emoji and symbols (ZWJ sequences, flags, skin tones)
    "I ❤️ 🍕 and 🚀! 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 👍🏽 🇺🇸 🇯🇵",
    "∀x∈ℝ: x² ≥ 0 ∑∞ ∫π ©®™ ←→↑↓ ♪♫",
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
    with pytest.raises(TypeError, match="encode takes a str, not bytes"):
        ours.encode(b"abc")
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
    code_points = [c for c in range(0, 0x110000, 97) if not 0xD800 <= c < 0xE000] + list(range(0x100))
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
@given(st.text(st.characters(max_codepoint=0x7F)))
def test_property_ascii_fast_path_splits_like_unicode_pattern(text):
    assert tokmod._PRETOKENIZE_ASCII.findall(text) == tokmod._PRETOKENIZE.findall(text)


@PROPERTY
@given(st.lists(st.integers(0, 50256), max_size=30))
def test_property_decode_matches_tokenizers(ours, hf, ids):
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)
