# build a 1M-piece string, each piece made with +, then join
def main():
    parts = []
    for i in range(1_000_000):
        parts.append("k" + str(i) + ";")
    print(len("".join(parts)))


main()
