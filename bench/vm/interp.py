# build a 1M-piece string, each piece an f-string, then join
def main():
    parts = []
    for i in range(1_000_000):
        parts.append(f"item{i},")
    print(len("".join(parts)))


main()
