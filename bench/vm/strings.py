def main():
    parts = []
    for i in range(1_000_000):
        parts.append(str(i % 10))
    s = ''.join(parts)
    print(len(s))

main()
