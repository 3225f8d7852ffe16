"""Small SentencePiece-style tokenizer.json for the fixtures, and tokenizer test cases.

The id layout copies the release's low ids (specials 0-16, so the English+pnc
prompt is [ID(▁), 7, 4, 16, ID(<|en|>), ID(<|en|>), 5, 9, 11, 13]); then
language tokens, the 256 <0xNN> byte-fallback pieces and word pieces. The
model is Unigram with byte_fallback; every id 0..V-1 is in the model vocab and
the specials are also added_tokens (special=True), as converted SentencePiece
tokenizers have them. Two decoder flavours are written: the main one (Replace
▁→space, ByteFallback, Fuse, Strip one leading space) and a Metaspace one, so
the C decoder is checked against both chains.
"""

import json

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, AddedToken

SPECIALS = [
    "<unk>", "<|nospeech|>", "<pad>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>",
    "<|nopnc|>", "<|startofcontext|>", "<|itn|>", "<|noitn|>", "<|timestamp|>", "<|notimestamp|>",
    "<|diarize|>", "<|nodiarize|>", "<|spkchange|>", "<|audioseparator|>", "<|emo:undefined|>",
    "<|emo:neutral|>", "<|emo:happy|>", "<|emo:sad|>", "<|emo:angry|>",
]
LANGS = ["af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs", "ca", "cs", "cy",
         "da", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fo", "fr", "gl", "gu", "ha", "he",
         "hi", "hr", "hu", "hy", "id", "is", "it", "ja", "ko", "nl", "pl", "pt", "ru", "vi", "zh"]
WORDS = ["the", "a", "of", "and", "to", "in", "is", "it", "that", "this", "hello", "world", "test",
         "short", "system", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "speech", "text",
         "time", "one", "two", "three", "four", "five", "end", "long", "English", "The", "A", "I",
         "Hello", "gut", "Morgen", "Wetter", "schön", "und", "bon", "jour", "café", "mer", "ci",
         "día", "perro", "niños", "mar", "حبا", "مر", "في", "日本", "的", "中文"]
SUBWORDS = ["ing", "ed", "er", "es", "ly", "tion", "th", "he", "an", "re", "on", "at", "nd", "st",
            "ou", "en", "ch", "sch", "ll", "ck", "qu", "og", "語", "文字"]
CHARS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + \
    list(".,?!'\"-:;()") + ["é", "ü", "ö", "ß", "ñ", "ç", "à", "ا", "ل", "م", "ر", "ب", "ح",
                            "日", "本", "の", "中", "文", "é"[0]]


def build_vocab():
    pieces = list(SPECIALS)
    pieces += ["<|%s|>" % l for l in LANGS]
    pieces += ["<0x%02X>" % b for b in range(256)]
    normal = []
    for w in WORDS:
        normal.append("▁" + w)
    normal += SUBWORDS
    seen = set()
    chars = []
    for c in CHARS:
        if c not in seen:
            seen.add(c)
            chars.append(c)
    # ▁ sits in the middle of the normal pieces so its id is not a round number.
    normal = normal[:40] + ["▁"] + normal[40:] + chars
    out, seen = [], set()
    for p in pieces + normal:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def make(decoder_flavour="main"):
    vocab = build_vocab()
    special = set(SPECIALS) | {"<|%s|>" % l for l in LANGS}
    scores = []
    for i, p in enumerate(vocab):
        if p in special or p.startswith("<0x"):
            scores.append((p, 0.0))
        else:
            # Longer pieces score higher so encode prefers whole words.
            scores.append((p, -10.0 + 0.5 * len(p) - 0.001 * i))
    tok = Tokenizer(models.Unigram(scores, unk_id=0, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    if decoder_flavour == "main":
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:
        tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                         decoders.Metaspace(replacement="▁", prepend_scheme="always",
                                                            split=True)])
    tok.add_special_tokens([AddedToken(p, special=True, normalized=False) for p in vocab if p in special])
    return tok


class Info:
    def __init__(self, tok):
        self.tok = tok
        self.vocab_size = tok.get_vocab_size()

    def id(self, piece):
        i = self.tok.token_to_id(piece)
        if i is None:
            raise KeyError(piece)
        return i


def prompt_ids(info, lang, pnc):
    toks = ["▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
            "<|%s|>" % lang, "<|%s|>" % lang, "<|pnc|>" if pnc else "<|nopnc|>", "<|noitn|>",
            "<|notimestamp|>", "<|nodiarize|>"]
    return [info.id(t) for t in toks]


def byte_ids(info, data):
    return [info.id("<0x%02X>" % b) for b in data]


def case_sequences(info):
    """Id sequences that exercise the decoder; the expected text comes from tokenizers."""
    I = info.id
    B = lambda s: byte_ids(info, s.encode("utf-8") if isinstance(s, str) else s)  # noqa: E731
    enc = lambda s: info.tok.encode(s, add_special_tokens=False).ids  # noqa: E731
    cases = [
        ("empty", []),
        ("only_specials", [I("<|startoftranscript|>"), I("<|en|>"), I("<|pnc|>"), I("<|endoftext|>")]),
        ("prompt_en_pnc", prompt_ids(info, "en", True)),
        ("words", [I("▁hello"), I("▁world"), I(".")]),
        ("words_after_prompt", prompt_ids(info, "en", True) + [I("▁The"), I("▁quick"), I("▁fox"),
                                                                I("."), I("<|endoftext|>")]),
        ("leading_bare_space", [I("▁"), I("▁"), I("▁hello")]),
        ("trailing_spaces", [I("▁hello"), I("▁"), I("▁")]),
        ("inner_double_space", [I("▁a"), I("▁"), I("▁dog")]),
        ("subwords", [I("▁test"), I("ing"), I("▁jumps"), I("ed"), I("!")]),
        ("non_ascii_pieces", [I("▁schön"), I("▁café"), I("▁مر"), I("▁حبا"), I("▁日本"), I("語")]),
        ("bytes_arabic", B("مرحبا")),
        ("bytes_emoji_4byte", [I("▁hello")] + B("😀") + [I("▁world")]),
        ("bytes_cjk_3byte", B("漢字") + [I("▁end")]),
        ("bytes_space_byte", [I("▁a")] + B(" ") + [I("d"), I("og")]),
        ("bytes_newline_tab", [I("▁a")] + B("\n\t") + [I("▁two")]),
        ("invalid_lone_continuation", [I("▁a")] + byte_ids(info, b"\x80") + [I("▁two")]),
        ("invalid_truncated_3byte", [I("▁a")] + byte_ids(info, b"\xe6\xbc") + [I("▁two")]),
        ("invalid_truncated_at_end", [I("▁a")] + byte_ids(info, b"\xf0\x9f\x98")),
        ("invalid_mixed_run", byte_ids(info, b"\xc3\xa9\xff\xc3\xa9")),
        ("invalid_overlong", byte_ids(info, b"\xc0\xaf")),
        ("invalid_surrogate", byte_ids(info, b"\xed\xa0\x80")),
        ("invalid_ff", [I("▁end")] + byte_ids(info, b"\xff") + [I("y")]),
        ("bytes_split_by_special", byte_ids(info, b"\xc3") + [I("<|pnc|>")] + byte_ids(info, b"\xa9")),
        ("bytes_split_by_piece", byte_ids(info, b"\xc3") + [I("e")] + byte_ids(info, b"\xa9")),
        ("specials_interleaved", [I("<|nospeech|>"), I("▁hello"), I("<|spkchange|>"), I("▁world"),
                                  I("<unk>"), I("<pad>"), I("!")]),
        ("unk_pad", [I("<unk>"), I("▁a"), I("<pad>")]),
        ("language_tokens", [I("<|ar|>"), I("▁مر"), I("<|ja|>"), I("▁日本")]),
        ("piece_with_inner_bytes_first", B("é") + [I("é"), I("▁café")]),
        ("first_is_byte_space", B(" ") + [I("▁hello")]),
        ("encoded_sentence", enc("Hello world, this is the quick test of speech.")),
        ("encoded_unicode", enc("Ça va? 日本語 مرحبا 😀 ok")),
        ("encoded_leading_space", enc("  two  spaces ")),
        ("bare_piece_start", [I("ing"), I("▁a")]),
        ("all_bytes_ascii", B("Hi there!")),
    ]
    return cases


def write_cases(path, tok_main, tok_meta):
    info = Info(tok_main)
    out = {
        "about": "Expected values from the Hugging Face tokenizers library (see tests/fixtures/README.md). "
                 "decode = Tokenizer.decode(ids, skip_special_tokens=True).",
        "tokenizers_version": __import__("tokenizers").__version__,
        "prompts": [],
        "decode": [],
    }
    for lang in ["en", "ar", "de", "fr", "es", "ja", "zh"]:
        for pnc in (True, False):
            out["prompts"].append({"language": lang, "punctuation": pnc,
                                   "ids": prompt_ids(info, lang, pnc)})
    for name, ids in case_sequences(info):
        out["decode"].append({
            "name": name, "ids": ids,
            "text": tok_main.decode(ids, skip_special_tokens=True),
            "text_metaspace": tok_meta.decode(ids, skip_special_tokens=True),
            "text_with_specials": tok_main.decode(ids, skip_special_tokens=False),
        })
    # Other decoder chains over the same vocabulary: the C test swaps the file's
    # "decoder" for each of these and expects the texts tokenizers gives.
    variants = [
        None,
        decoders.Strip(" ", 2, 1),
        decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 1)]),
        decoders.Sequence([decoders.Replace("▁▁", "X"), decoders.ByteFallback()]),
        decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace("▁", prepend_scheme="never")]),
        decoders.Sequence([decoders.Replace("▁", "  "), decoders.ByteFallback(), decoders.Fuse(),
                           decoders.Strip(" ", 0, 2)]),
        decoders.Sequence([decoders.Metaspace("▁", prepend_scheme="first"), decoders.Fuse()]),
        decoders.ByteFallback(),
    ]
    out["decoder_variants"] = []
    for dec in variants:
        t = Tokenizer.from_str(tok_main.to_str())
        t.decoder = dec
        dj = json.loads(t.to_str())["decoder"]
        rows = []
        for name, ids in case_sequences(info):
            try:
                text = t.decode(ids, skip_special_tokens=True)
            except BaseException:  # tokenizers panics where Strip cuts cross; the C side gives ""
                text = None
            rows.append({"name": name, "ids": ids, "text": text})
        out["decoder_variants"].append({"decoder": dj, "cases": rows})
    out["quirks"] = quirk_cases()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return out


def quirk_cases():
    """A tiny tokenizer whose pieces probe ByteFallback's parsing (lowercase hex,
    Rust's from_str_radix accepting '+', pieces that only look like bytes),
    duplicate model pieces (last wins) and specials that are not added tokens."""
    pieces = ["<unk>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>", "<|startofcontext|>",
              "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>", "<|emo:undefined|>", "<|en|>", "▁",
              "<0xC3>", "<0xa9>", "<0x+A>", "<0x0G>", "<0xC3", "<0X41>", "<0x41>", "a", "▁b", "▁", "<pad>",
              "<0x-1>", "<0x+>", "<|not_added|>"]
    tok = Tokenizer(models.Unigram([(p, 0.0) for p in pieces], unk_id=0, byte_fallback=True))
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(p, special=True, normalized=False) for p in pieces[:11] + ["<pad>"]])
    I = lambda p: pieces.index(p)  # noqa: E731
    seqs = [
        ("lowercase_hex", [I("<0xC3>"), I("<0xa9>")]),
        ("plus_sign_hex", [I("a"), I("<0x+A>"), I("a")]),
        ("not_hex", [I("<0x0G>"), I("<0xC3")]),
        ("capital_X", [I("<0X41>"), I("<0x41>")]),
        ("minus_and_bare_plus", [I("<0x-1>"), I("<0x+>"), I("<0x41>")]),
        ("duplicate_space_piece", [11, I("a"), 21, I("▁b")]),
        ("special_by_string_not_added", [I("<|not_added|>"), I("a")]),
        ("pad_special", [I("<pad>"), I("▁b"), I("<|endoftext|>")]),
    ]
    return {
        "tokenizer": json.loads(tok.to_str()),
        "id_of_space": tok.token_to_id("▁"),
        "cases": [{"name": n, "ids": ids, "text": tok.decode(ids, skip_special_tokens=True)} for n, ids in seqs],
    }
