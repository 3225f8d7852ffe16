#!/usr/bin/env python3
"""Generate the aligner's text and Viterbi cases from the Python twin (the oracle).

Run: /work/origenv/bin/python tools/reference/make_align_cases.py
Writes tests/fixtures/align/text_cases.json and tests/fixtures/align/viterbi_cases.json.

Text: every word goes through the twin's own functions, cohere_transcribe.alignment.text_utils
(text_normalize, _uroman_token: normalisation then uroman 1.3.1.1 itself), with the language
code the twin passes (ISO3: "ara", "eng"). Viterbi: torchaudio.functional.forced_align on random
log-probability matrices (ties, repeats, T = L + R).
"""
import json
import os
import random
import re

import numpy as np
import torch
from torchaudio.functional import forced_align

from cohere_transcribe.alignment import text_utils as tu
from cohere_transcribe.alignment.norm_config import PUNCTUATION_SET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "align")

ARABIC_WORDS = """
مرحبا بكم في العالم الإسلامُ مُحَمَّد إلى القاهرة مؤمن ـــلا السلام عليكم ورحمة الله وبركاته كتاب
مدرسة جامعة طالب معلم بيت سيارة شمس قمر نجم سماء أرض ماء نار هواء شجرة زهرة طريق مدينة قرية بحر
نهر جبل صحراء يوم ليلة صباح مساء أسبوع شهر سنة ساعة دقيقة لغة عربية إنجليزية فرنسية كلمة جملة
سؤال جواب مشكلة حل عمل عامل مكتب مستشفى طبيب مريض دواء صحة قلب عين أذن يد رجل رأس وجه فم سنّ
شاي قهوة خبز لحم دجاج سمك أرز فاكهة تفاحة برتقال موز عنب حليب عصير إسلام مسجد صلاة صوم زكاة حج
قرآن آية سورة رسول نبيّ أمّ أب أخ أخت ابن ابنة جدّ جدّة عائلة صديق جار ضيف مسؤول رئيس وزير حكومة
دولة شعب وطن حرية سلام حرب جيش شرطة قانون محكمة قاضٍ مؤتمر اجتماع قرار اقتصاد سوق تجارة بنك مال
دينار درهم ريال جنيه شركة مصنع إنتاج استيراد تصدير هاتف حاسوب إنترنت رسالة بريد تلفاز إذاعة صحيفة
مجلة أخبار تعليم ثقافة فنّ موسيقى رياضة كرة ملعب فريق لاعب مباراة هدف فوز خسارة تعادل بطولة كأس
الذي التي الذين هذا هذه ذلك تلك هنا هناك متى أين كيف لماذا ماذا مَن لا نعم ربما أيضاً جداً فقط
قال يقول كان يكون ذهب يذهب جاء يجيء رأى يرى سمع يسمع أكل يأكل شرب يشرب نام ينام كتب يكتب قرأ يقرأ
فهم يفهم علم يعلم عرف يعرف أراد يريد استطاع يستطيع بدأ يبدأ انتهى ينتهي سأل يسأل أجاب يجيب شيء
أشياء بئر رئة ذئب سائل مسائل قراءة هيئة بيئة جزء ضوء سوء شيئاً مساءً ابتداءً إنشاء إملاء أصدقاء
ایران بایک .ایرن علماء وزراء رؤساء مُؤَسَّسَة تَأْسِيس الْقُرْآن الْكَرِيم بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ ٱلْحَمْدُ لِلَّهِ رَبِّ ٱلْعَٰلَمِينَ
"""

ENGLISH_WORDS = """
hello world It’s it's don't can’t won't they're I'm you've we'd The quick brown fox jumps over the lazy
dog Straße café naïve résumé coöperate façade jalapeño piñata São Paulo Zürich Ångström Øresund
Æsir Œuvre Dvořák Łódź İstanbul Kraków Ελλάδα Москва 1990s 3rd 21st 2026 covid19 mp3 B2B A4 e-mail
well-known state-of-the-art U.S.A. Dr. Mr. Mrs. Ph.D. e.g. i.e. etc. "quoted" ‘single’ “double”
(parenthesis) (1) (see 2) [bracket] {brace} <angle> hello, world! really? yes: no; maybe... &lt;tag&gt;
&nbsp;space AT&T Q&A 50% $100 €20 £5 #hashtag @user under_score back\\slash a/b x*y 1+1=2 ﬁne ﬂow
Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ ½ ¼ ² ³ ™ © ® ° µ Ⅻ ⅳ one two three four five six seven eight nine ten
apple banana cherry grape lemon mango orange peach pear plum Monday Tuesday Wednesday Thursday Friday
Saturday Sunday January February March April May June July August September October November December
knight knowledge phone photograph schedule science psychology rhythm queue through thought though
tough laugh daughter island isle Sean St. McDonald O'Brien MacArthur Schmidt Bordeaux château Renault
Thompson nation mission question pneumonia wrestle write wreck eighty height sleigh Xavier xylophone
zebra quiz jazz fizz buzz yellow yesterday young youth μπανάνα αμπέλι γκολ αγκάθι μs μmol Достоевский ий Ереван ΟΔΟΣ
"""


# Scripts the random tiny ASR model of the goldens emits (CJK, kana, Hangul, Syriac, Javanese).
OTHER_SCRIPTS = """
中文 的 日本語 中文的 한국어 가나 がっこう ちょっと マッチ キャット ニュース カップ きゃく ッチャ ぎゅ ファ っあ
ܐܠܗܐ ܐ ꦏꦱ 日 中 文 北京 上海 你好 谢谢
"""
GARBAGE = ["es\ufffd\u0631\ufffd\u0627L\x16es:\u00f69", "\u4e2d\u6587\ufffd\ufffd\u0644\ufffd\ufffd\ufffd",
           "quick\ufffd\u00e7\ufffd\ufffdes\ufffd\ufffd\u00f6\ufffd\ufffd\ufffdA\ufffd\u0644\u06659\u65e5",
           "\u0710\u0705\ua9de\u7684", "\u00f1\u0039\u0039\u00f1\u0039\u00f1+"]


def arabic_random_words(rng, n):
    letters = [chr(c) for c in range(0x0621, 0x064B) if c != 0x0640]
    extra = [chr(c) for c in list(range(0x0671, 0x06D4)) + list(range(0x0750, 0x0780))
             + list(range(0x08A0, 0x08B5)) + list(range(0x08B6, 0x08C8))]
    marks = [chr(c) for c in range(0x064B, 0x0660)] + ["\u0670", "\u06E5", "\u06E6"]
    hamza = ["أ", "إ", "آ", "ؤ", "ئ", "ء", "\u0654", "\u0655", "ٱ"]
    bidi = ["\u200E", "\u200F", "\u202A", "\u202C", "\u200B", "\u200C", "\u200D", "\u061C"]
    digits = [str(d) for d in range(10)] + [chr(0x0660 + d) for d in range(10)] + \
             [chr(0x06F0 + d) for d in range(10)]
    punct = ["،", "؛", "؟", ".", ",", "!", "«", "»", '"', "(", ")", ":", "-", "'", "’", "…", "٪", "٫", "٬",
             "۔"]
    pres = [chr(c) for c in range(0xFE80, 0xFEFC, 3)] + [chr(c) for c in range(0xFB50, 0xFBB0, 5)]
    out = []
    for i in range(n):
        w = []
        for _ in range(rng.randint(1, 7)):
            r = rng.random()
            if r < 0.55:
                w.append(rng.choice(letters))
            elif r < 0.62:
                w.append(rng.choice(extra))
            elif r < 0.68:
                w.append(rng.choice(hamza))
            elif r < 0.72:
                w.append(rng.choice(pres))
            else:
                w.append(rng.choice(letters))
            if rng.random() < 0.35:
                w.append(rng.choice(marks))
            if rng.random() < 0.08:
                w.append("ـ" * rng.randint(1, 3))
            if rng.random() < 0.05:
                w.append(rng.choice(bidi))
        k = rng.random()
        if k < 0.08:
            w.insert(rng.randint(0, len(w)), rng.choice(punct))
        elif k < 0.14:
            w.append(rng.choice(punct))
        elif k < 0.20:
            w = [rng.choice(digits) for _ in range(rng.randint(1, 3))] + (w if rng.random() < 0.5 else [])
        elif k < 0.24:
            w.insert(0, rng.choice(bidi))
        elif k < 0.27:
            w = ["(", rng.choice(digits), ")"] + w
        out.append("".join(w))
    return out


def english_random_words(rng, n):
    base = "abcdefghijklmnopqrstuvwxyz"
    accents = "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßœłđðþāēīōūčšžřńśźżğışəŀ"
    out = []
    for i in range(n):
        w = []
        for _ in range(rng.randint(1, 9)):
            r = rng.random()
            c = rng.choice(base) if r < 0.8 else rng.choice(accents)
            w.append(c.upper() if rng.random() < 0.15 else c)
        k = rng.random()
        if k < 0.1:
            w.insert(rng.randint(1, len(w)), rng.choice(["'", "’", "‘", "-", ".", "&amp;"]))
        elif k < 0.18:
            w.append(rng.choice([",", ".", "!", "?", ":", ";", "…", '"', ")", "'s", "’s"]))
        elif k < 0.22:
            w.insert(0, rng.choice(['"', "(", "“", "‘", "¿", "¡"]))
        elif k < 0.27:
            w.insert(rng.randint(0, len(w)), str(rng.randint(0, 999)))
        out.append("".join(w))
    return out


def text_cases():
    rng = random.Random(14)
    arabic = ARABIC_WORDS.split() + arabic_random_words(rng, 700)
    english = ENGLISH_WORDS.split() + english_random_words(rng, 300) + OTHER_SCRIPTS.split() + GARBAGE
    words = []
    for lang, iso, group in (("ar", "ara", arabic), ("en", "eng", english)):
        for w in group:
            norm = tu.text_normalize(w)
            words.append({"lang": lang, "word": w, "normalized": norm,
                          "token": tu._uroman_token(norm, iso)})
    # Whole-text normalisation (multi-word strings through text_normalize).
    texts = [
        "مرحبا بكم في العالم", "(12) hello (world) (a1b)", "a &lt;b&gt; c&nbsp;d", "it’s a’b’c rock’n’roll",
        "123 456abc 789", "٣ ٤٥ ۱۲ ۳", "x 12 y 34", "ـــلا ٱلله", "a\u200fb\u200ec", "((1) (x))",
        "  spaced\tout\n", "3", "٣", "(٣)", "don’t stop", "a ‘b’ c", "1 2 3 4 5", "end 12",
    ]
    norm_cases = [{"text": t, "normalized": tu.text_normalize(t)} for t in texts]
    # Segment texts → tokens_starred, as the twin's preprocess_text builds them.
    seg_texts = [("ar", "مرحبا بكم في العالم"), ("en", "It’s 3 o'clock, Straße!"), ("ar", "٣ كتب"),
                 ("en", "la bi"), ("en", "... ok")]
    prep = []
    for lang, t in seg_texts:
        tokens_starred, text_starred = tu.preprocess_text(t, {"ar": "ara", "en": "eng"}[lang])
        prep.append({"lang": lang, "text": t, "tokens_starred": tokens_starred})
    rx = re.compile(f"[{PUNCTUATION_SET}]")
    punct = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and rx.match(chr(c))]
    return {"words": words, "normalize": norm_cases, "prepare": prep, "punctuation": punct,
            "n_arabic": len(arabic), "n_english": len(english)}


def viterbi_cases():
    rng = np.random.default_rng(14)
    cases = []
    def add(em, tg, note):
        em = np.asarray(em, dtype=np.float32)
        try:
            path, scores = forced_align(torch.from_numpy(em[None]), torch.tensor([tg], dtype=torch.int64),
                                        blank=0)
            cases.append({"note": note, "T": em.shape[0], "C": em.shape[1], "targets": list(map(int, tg)),
                          "emissions": [float(x) for x in em.reshape(-1)],
                          "path": [int(x) for x in path[0].tolist()]})
        except Exception as exc:  # T < L + R and friends: the C side must refuse too
            cases.append({"note": note, "T": em.shape[0], "C": em.shape[1], "targets": list(map(int, tg)),
                          "emissions": [float(x) for x in em.reshape(-1)], "error": str(exc)[:120]})

    def logsm(x):
        x = x - x.max(axis=1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=1, keepdims=True))

    for i in range(150):
        C = int(rng.integers(3, 9))
        L = int(rng.integers(1, 7))
        if i % 5 == 0:   # many repeats
            tg = [int(rng.integers(1, 3))] * L
        else:
            tg = [int(rng.integers(1, C)) for _ in range(L)]
        R = sum(1 for a, b in zip(tg, tg[1:]) if a == b)
        kind = i % 6
        if kind == 0:
            T = L + R                    # the tightest fit
        elif kind == 1:
            T = L + R + 1
        elif kind == 2:
            T = max(1, L + R - 1)        # too short: error
        else:
            T = L + R + int(rng.integers(0, 12))
        if i % 4 == 0:    # quantised values: many exact ties
            em = logsm(rng.integers(0, 3, size=(T, C)).astype(np.float32))
            em = np.round(em, 0) if i % 8 == 0 else em
        elif i % 4 == 1:  # exact ties everywhere
            em = np.full((T, C), -np.log(C), dtype=np.float32)
        else:
            em = logsm(rng.normal(0, 3, size=(T, C)).astype(np.float32))
        add(em, tg, f"random {i} kind {kind}")
    # The doctor's smoke: 2×2 [[4,0],[0,4]], target [1].
    add([[4.0, 0.0], [0.0, 4.0]], [1], "doctor smoke")
    return cases


VOCAB = ["<blank>", "<pad>", "</s>", "<unk>", "a", "i", "e", "n", "o", "u", "t", "s", "r", "m", "k", "l",
         "d", "g", "h", "y", "b", "p", "w", "c", "v", "j", "z", "f", "'", "q", "x"]


class _Tok:
    pad_token_id = 1

    def get_vocab(self):
        return {t: i for i, t in enumerate(VOCAB)}


def segment_cases():
    """§9.7 steps 2-8 through the twin's functions on random emissions."""
    from cohere_transcribe.alignment.alignment_utils import get_spans
    from cohere_transcribe.alignment.runtime import build_alignment_vocabulary, get_alignments_safe
    from cohere_transcribe.alignment.text_utils import postprocess_results, preprocess_text

    rng = np.random.default_rng(9)
    vocab = build_alignment_vocabulary(_Tok(), 32)
    texts = [("en", "la bi"), ("en", "hello world"), ("ar", "مرحبا بكم في العالم"), ("ar", "la ٣ bi"),
             ("en", "It’s 3 o'clock"), ("en", "a b c d e"), ("ar", "الإسلامُ مُحَمَّد"), ("en", "book keeper"),
             ("en", "... ok !"), ("en", "zz top"), ("ar", "٣ ٤"), ("en", "<star> x")]
    out = []
    for k in range(100):
        lang, text = texts[k % len(texts)]
        tokens_starred, text_starred = preprocess_text(text, {"ar": "ara", "en": "eng"}[lang])
        n_letters = sum(len(t.replace(" ", "")) if t != "<star>" else 1 for t in tokens_starred)
        T = int(rng.integers(max(1, n_letters - 2), n_letters * 3 + 6))
        x = rng.normal(0, 2.5, size=(T, 31)).astype(np.float32)
        if k % 3 == 0:
            x[:, 0] += 3.0  # blank-heavy, like real emissions
        x = x - x.max(axis=1, keepdims=True)
        lp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
        # Hundredths keep the file small; the C side rebuilds float32(k / 100) exactly.
        hundredths = np.round(lp * 100).astype(np.int64)
        em = np.zeros((T, 32), dtype=np.float32)
        em[:, :31] = (hundredths / 100.0).astype(np.float32)
        case = {"lang": lang, "text": text, "T": T, "hundredths": [int(v) for v in hundredths.reshape(-1)]}
        try:
            segments, blank = get_alignments_safe(em, tokens_starred, vocab)
            spans = get_spans(tokens_starred, segments, blank)
            results = postprocess_results(text_starred, spans, 20.0)
            if [r["text"] for r in results] != text.split():
                raise ValueError("words differ")
            case["words"] = [[r["start"], r["end"]] for r in results]
        except Exception as exc:
            case["error"] = repr(exc)[:100]
        out.append(case)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    t = text_cases()
    with open(os.path.join(OUT, "text_cases.json"), "w", encoding="utf-8") as fh:
        json.dump(t, fh, ensure_ascii=False, indent=0)
    v = viterbi_cases()
    with open(os.path.join(OUT, "viterbi_cases.json"), "w", encoding="utf-8") as fh:
        json.dump(v, fh, separators=(",", ":"))
    sc = segment_cases()
    with open(os.path.join(OUT, "segment_cases.json"), "w", encoding="utf-8") as fh:
        json.dump(sc, fh, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(sc)} segment cases ({sum('error' in c for c in sc)} fall back)")
    print(f"{len(t['words'])} words ({t['n_arabic']} Arabic, {t['n_english']} English), "
          f"{len(v)} Viterbi cases ({sum('error' in c for c in v)} errors)")


if __name__ == "__main__":
    main()
