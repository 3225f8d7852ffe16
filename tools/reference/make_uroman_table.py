#!/usr/bin/env python3
"""Generate src/align/uroman_table.c from the uroman 1.3.1.1 package.

Run with the oracle environment: /work/origenv/bin/python tools/reference/make_uroman_table.py

What it extracts (docs/ALIGNMENT.md, "Romanisation table"):
  * singles: for every code point of the covered ranges, what uroman gives for that character
    alone (lcode "ara"; the script checks "eng" gives the same letters), reduced to what the
    aligner keeps: lowercased, only [a-z'] characters. Code points whose romanisation keeps no
    such character are left out (the C side treats a missing entry as "nothing").
  * rules: uroman's multi-character rules (and single-character rules with word-position
    conditions) over the covered ranges, for no language or for ara/eng, whose result differs
    from the concatenation of the singles; the C side applies them longest-first with uroman's
    conditions (start/end of word, whole word, language).
uroman is by Ulf Hermjakob, USC Information Sciences Institute (2015-2020), under an MIT-style
licence that asks publications to acknowledge it; the generated file carries that notice.
"""
import os
import re
import sys
from importlib import metadata

import uroman as uroman_pkg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "src", "align", "uroman_table.c")

# Scripts where uroman's romanisation is (nearly) per character. Other scripts are not in the
# table and romanise to nothing (docs/ALIGNMENT.md).
RANGES = [
    (0x0000, 0x058F),  # Latin, Latin-1, Extended-A/B, IPA, modifiers, combining, Greek, Cyrillic, Armenian
    (0x0590, 0x05FF),  # Hebrew
    (0x0600, 0x06FF),  # Arabic
    (0x0750, 0x077F),  # Arabic Supplement
    (0x0870, 0x08FF),  # Arabic Extended-B/A
    (0x10A0, 0x10FF),  # Georgian
    (0x1E00, 0x1FFF),  # Latin Extended Additional, Greek Extended
    (0x2000, 0x218F),  # punctuation, letterlike symbols, number forms
    (0x2C60, 0x2C7F),  # Latin Extended-C
    (0xA640, 0xA69F),  # Cyrillic Extended-B
    (0xA720, 0xA7FF),  # Latin Extended-D
    (0xAB30, 0xAB6F),  # Latin Extended-E
    (0x0700, 0x074F),  # Syriac
    (0x0780, 0x07BF),  # Thaana
    (0x3040, 0x30FF),  # Hiragana, Katakana (small tsu / small y handled in romanize.c)
    (0x3400, 0x4DBF),  # CJK Extension A (pinyin)
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs (pinyin)
    (0xA980, 0xA9DF),  # Javanese
    (0xAC00, 0xD7A3),  # Hangul syllables
]


def covered(cp):
    return any(a <= cp <= b for a, b in RANGES)


def keep(rom):
    """What the aligner keeps of a romanisation: lowercase, then only [a-z']."""
    low = "".join(c.lower() for c in rom)
    return "".join(c for c in low if c in "abcdefghijklmnopqrstuvwxyz'")


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    version = metadata.version("uroman")
    if version != "1.3.1.1":
        sys.exit(f"uroman {version} installed; this table is for 1.3.1.1")
    u = uroman_pkg.Uroman()
    singles = {}
    for cp in range(0x110000):
        if not covered(cp) or 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        ara = keep(u.romanize_string(ch, lcode="ara"))
        eng = keep(u.romanize_string(ch, lcode="eng"))
        if ara != eng:
            sys.exit(f"U+{cp:04X}: ara gives {ara!r}, eng {eng!r}; the table assumes they agree")
        if ara:
            singles[cp] = ara

    flag_names = [
        ("use-only-at-start-of-word", "CT_UR_START_ONLY"),
        ("dont-use-at-start-of-word", "CT_UR_NOT_START"),
        ("use-only-at-end-of-word", "CT_UR_END_ONLY"),
        ("dont-use-at-end-of-word", "CT_UR_NOT_END"),
        ("use-only-for-whole-word", "CT_UR_WHOLE_WORD"),
    ]
    rules = []
    for s, rule_list in sorted(u.rom_rules.items()):
        if not s or not all(covered(ord(c)) for c in s):
            continue
        usable = []
        for r in rule_list:
            lcodes = r["lcodes"]
            if lcodes and not ({"ara", "eng"} & set(lcodes)):
                continue
            if r["t"] is None:
                continue
            flags = [c for k, c in flag_names if r[k]]
            lang = "0"
            if lcodes:
                bits = []
                if "ara" in lcodes:
                    bits.append("CT_UR_LANG_ARA")
                if "eng" in lcodes:
                    bits.append("CT_UR_LANG_ENG")
                lang = "|".join(bits)
            usable.append((keep(r["t"]), flags, lang, r["n-restr"] or 0))
        if not usable:
            continue
        concat = "".join(singles.get(ord(c), "") for c in s)
        conditional = any(f or lang != "0" for _, f, lang, _ in usable)
        if len(s) == 1 and not conditional:
            continue  # the single entry already says it
        if all(v == concat for v, _, _, _ in usable):
            continue  # same letters either way
        for v, f, lang, n in usable:
            rules.append((s, v, "|".join(f) or "0", lang, n))

    lines = []
    lines.append("/* uroman_table.c — GENERATED by tools/reference/make_uroman_table.py from the")
    lines.append(f" * uroman {version} package (PyPI); do not edit. Single code points and context rules")
    lines.append(" * reduced to the letters the aligner keeps ([a-z']); docs/ALIGNMENT.md says how.")
    lines.append(" * Data derived from uroman, Copyright (C) 2015-2020 Ulf Hermjakob, USC Information")
    lines.append(" * Sciences Institute, MIT-style licence: \"This project uses the universal romanizer")
    lines.append(" * software 'uroman' written by Ulf Hermjakob, USC Information Sciences Institute")
    lines.append(" * (2015-2020)\". lint: long-file (generated data). */")
    lines.append('#include "align/uroman_table.h"')
    lines.append("")
    # One dense array of letters per covered block (the compiler pools equal strings).
    for lo, hi in RANGES:
        lines.append(f"static const char *const b{lo:04X}[] = {{")
        vals = [c_str(singles.get(cp, "")) for cp in range(lo, hi + 1)]
        for k in range(0, len(vals), 12):
            lines.append("    " + ", ".join(vals[k:k + 12]) + ",")
        lines.append("};")
    lines.append("const ct_uroman_block ct_uroman_blocks[] = {")
    for lo, hi in sorted(RANGES):
        lines.append(f"    {{0x{lo:04X}, 0x{hi:04X}, b{lo:04X}}},")
    lines.append("};")
    lines.append(f"const size_t ct_uroman_n_blocks = {len(RANGES)};")
    lines.append("")
    lines.append("/* Rules for one source string are contiguous, in uroman's order (first wins a tie). */")
    lines.append("const ct_uroman_rule ct_uroman_rules[] = {")
    for s, v, f, lang, n in rules:
        cps = ", ".join(f"0x{ord(c):X}" for c in s)
        lines.append(f"    {{{{{cps}}}, {len(s)}, {c_str(v)}, {f}, {lang}, {n}}},")
    lines.append("};")
    lines.append(f"const size_t ct_uroman_n_rules = {len(rules)};")
    with open(OUT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"{OUT}: {len(singles)} code points with letters in {len(RANGES)} blocks, {len(rules)} rules; max rule length "
          f"{max(len(r[0]) for r in rules)}")


if __name__ == "__main__":
    main()
