#!/usr/bin/env python3
"""Writes the wordfreq workload's input: ~10 MB of lowercase words, 12 to a line,
drawn from a 20,000-word vocabulary with a Zipf-like distribution by a fixed linear
congruential generator, so every run (and every machine) gets the same bytes.
Usage: gen_words.py OUT [MEGABYTES]"""
import sys

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "an", "el", "or", "ut",
             "pre", "con", "ter", "ing", "al", "ed", "ous", "ly"]


def word(n):
    out = []
    n += 1
    while n:
        out.append(SYLLABLES[n % len(SYLLABLES)])
        n //= len(SYLLABLES)
    return "".join(out)


def main():
    out = sys.argv[1]
    size = int(float(sys.argv[2]) * 1_000_000) if len(sys.argv) > 2 else 10_000_000
    vocab = [word(i) for i in range(20_000)]
    x = 12345
    written = 0
    lines = []
    while written < size:
        ws = []
        for _ in range(12):
            x = (x * 1103515245 + 12345) % 2147483648
            # Zipf-like: the square of a uniform number favours small ranks.
            u = x / 2147483648
            ws.append(vocab[int(u * u * u * len(vocab))])
        line = " ".join(ws)
        lines.append(line)
        written += len(line) + 1
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
        f.write("\n")


main()
