# word frequency over a text file (argv[1], ~10 MB made by gen_words.py): every
# whitespace-separated word counted in a dict, report the most frequent word
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    counts = {}
    total = 0
    for w in text.split():
        counts[w] = counts.get(w, 0) + 1
        total += 1
    best, best_n = "", 0
    for w, n in counts.items():
        if n > best_n:
            best, best_n = w, n
    print(f"{total} {len(counts)} {best} {best_n}")


main()
