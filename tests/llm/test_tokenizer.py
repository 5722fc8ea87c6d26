"""GPT-2 tokenizer: exact agreement with Hugging Face ``tokenizers`` on the real GPT-2 vocabulary.

The vocabulary and merges are in the repository (data/gpt2-tokenizer); ``tokenizers`` builds its tokenizer from
them (ByteLevel BPE with GPT-2's settings) and writes the ``tokenizer.json`` that gpk_array's ``from_file`` reads.
"""
import json
import pathlib
import random
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpk_array.llm import _pretokenizer_classes as classes
from gpk_array.llm import tokenizer as tokmod
from gpk_array.llm.tokenizer import Tokenizer

DATA = pathlib.Path(__file__).resolve().parent / "data" / "gpt2-tokenizer"
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
    # letters/digits of Unicode 17.0 and later, which tokenizers' regex engine (Unicode 16.0) does not know
    "\u088f\u0c5c abc \U00010940\U00010941 def \U000323b0\U000323b1 12\U00011de0",
    "\u0558's \u208f1's a\ua7dd's \U00010ee0\U00010ee0's 9\U00011de5 x\u0558y",
]


def _hf_gpt2(tokenizers):
    """GPT-2's tokenizer as Hugging Face ``tokenizers`` builds it from vocab.json and merges.txt."""
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors

    tok = tokenizers.Tokenizer(models.BPE.from_file(str(DATA / "vocab.json"), str(DATA / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False)])
    return tok


@pytest.fixture(scope="module")
def hf():
    return _hf_gpt2(pytest.importorskip("tokenizers"))


@pytest.fixture(scope="module")
def tokenizer_json(hf, tmp_path_factory):
    """GPT-2's tokenizer.json, as ``tokenizers`` writes it."""
    path = tmp_path_factory.mktemp("gpt2-json") / "tokenizer.json"
    hf.save(str(path))
    return path


@pytest.fixture(scope="module")
def ours():
    return Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")


def _corpus():
    """The hand-written samples, plus random concatenations of them."""
    rng = random.Random(0)
    glue = ["", " ", "\n", "  ", "\t", "'s", EOT]
    mixed = ["".join(rng.choice(CORPUS) + rng.choice(glue) for _ in range(rng.randint(2, 6))) for _ in range(200)]
    return CORPUS + mixed


def test_known_encodings(ours, hf):
    """The encodings in data/gpt2-tokenizer/README.md."""
    for text, ids in [("Hello, world!", [15496, 11, 995, 0]),
                      (" The quick brown fox jumps over the lazy dog.",
                       [383, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13])]:
        assert hf.encode(text).ids == ids
        assert ours.encode(text) == ids


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


def test_json_form_matches_vocab_merges_form(ours, hf, tokenizer_json):
    """from_file on tokenizer.json builds the same tables as from_vocab_merges, so the tests of ``ours`` hold for it."""
    other = Tokenizer.from_file(tokenizer_json)
    assert other._vocab == ours._vocab
    assert other._ranks == ours._ranks
    assert other._special == ours._special == {EOT: 50256}
    assert other.vocab_size == ours.vocab_size == hf.get_vocab_size() == 50257
    assert other.eos_token_id == ours.eos_token_id == 50256
    texts = _corpus()
    assert other.encode_batch(texts) == [e.ids for e in hf.encode_batch(texts)]


def test_from_dir(tmp_path, hf, tokenizer_json):
    text = f"Hello, world!{EOT}b"
    assert Tokenizer.from_dir(DATA).encode(text) == hf.encode(text).ids  # vocab.json and merges.txt
    (tmp_path / "tokenizer.json").write_bytes(tokenizer_json.read_bytes())
    assert Tokenizer.from_dir(tmp_path).encode(text) == hf.encode(text).ids
    (tmp_path / "tokenizer.json").unlink()
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    assert Tokenizer.from_dir(tmp_path).encode(text) == hf.encode(text).ids
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
    small = Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")
    for text in CORPUS:
        assert small.encode(text) == hf.encode(text).ids
    assert len(small._cache) <= 4


def _version_sensitive_code_points():
    """Code points whose class in the shipped (Unicode 16.0) tables differs from Python's ``unicodedata`` or from
    the installed ``regex`` module (other Unicode versions), and the ends of every shipped range with their
    neighbours."""
    shipped = {}
    for name, ranges in (("L", classes.LETTER), ("N", classes.DIGIT), ("S", classes.SPACE)):
        for first, last in ranges:
            shipped.update(dict.fromkeys(range(first, last + 1), name))
    points = {c for first, last in (*classes.LETTER, *classes.DIGIT, *classes.SPACE)
              for c in (first - 1, first, last, last + 1)}
    all_points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for c in all_points:
        category = unicodedata.category(chr(c))[0]
        if shipped.get(c, "O") != (category if category in "LN" else "S" if chr(c).isspace() else "O"):
            points.add(c)
    try:
        import regex
    except ImportError:
        return points
    text = "".join(map(chr, all_points))
    for name, pattern in (("L", r"\p{L}"), ("N", r"\p{N}")):
        points.update(ord(m.group()) for m in regex.finditer(pattern, text) if shipped.get(ord(m.group())) != name)
    return points


def test_pretokenizer_classes_match_tokenizers():
    """Letter / digit / space / other classes of sampled code points, of every code point whose class changes
    between Unicode versions, and of both ends of every range of the shipped classes.

    scripts/gen_pretokenizer_classes.py --check compares all 1.1 million code points (20 s)."""
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    newer = {0x088F, 0x0C5C, 0x0558, 0x208F, 0xA7DD, 0x10940, 0x10EE0, 0x11DE0, 0x323B0}  # letters, digits after 16.0
    code_points = sorted({*range(0, 0x110000, 97), *range(0x100), *newer, *_version_sensitive_code_points()})
    code_points = [c for c in code_points if 0 <= c < 0x110000 and not 0xD800 <= c < 0xE000]
    for start in range(0, len(code_points), 2000):
        # "x" + c joins letters, "1" + c digits, "!" + c other symbols; whitespace joins none
        text = "".join(f"x{c}1{c}!{c}\n" for c in map(chr, code_points[start:start + 2000]))
        ends = [end for _, (_, end) in byte_level.pre_tokenize_str(text)]
        pos, ours = 0, []
        for piece in tokmod._pretokenize(text):
            pos += len(piece)
            ours.append(pos)
        assert ours == ends


def test_import_needs_neither_tokenizers_nor_regex():
    code = ("import sys; import gpk_array.llm.tokenizer; "
            "print(sorted(m for m in ('tokenizers', 'regex') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_malformed_files(tmp_path, tokenizer_json):
    merges = tmp_path / "merges.txt"
    vocab = tmp_path / "vocab.json"
    vocab.write_text((DATA / "vocab.json").read_text(encoding="utf-8"), encoding="utf-8")
    merges.write_text("#version: 0.2\n\u0120 t\nbad line here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt:3: expected two tokens"):
        Tokenizer.from_vocab_merges(vocab, merges)
    merges.write_text("#version: 0.2\n\u0120 t\nqqq zzz\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merge 1 \('qqq', 'zzz'\): token 'qqq' is not in the vocabulary"):
        Tokenizer.from_vocab_merges(vocab, merges)
    spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
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
def test_property_ascii_fast_path_splits_like_stand_ins(text):
    assert tokmod._PRETOKENIZE_ASCII.findall(text) == tokmod._pretokenize_stand_ins(text)


@PROPERTY
@given(st.lists(st.integers(0, 50256), max_size=30))
def test_property_decode_matches_tokenizers(ours, hf, ids):
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)
