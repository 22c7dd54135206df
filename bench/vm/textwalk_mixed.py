def main():
    t = "abcdefghij" * 100_000 + "é"
    n = 0
    for i in range(len(t)):
        if t[i] == "a":
            n += 1
    print(n)


main()
