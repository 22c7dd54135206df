def main():
    s = 0
    i = 0
    while i < 10_000_000:
        s = s + i
        i = i + 1
    print(s)

main()
