# 10M-iteration Int loop, written with for … in range
def main():
    s = 0
    for i in range(10_000_000):
        s += i
    print(s)


main()
