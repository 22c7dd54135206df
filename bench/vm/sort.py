# sort 1M pseudo-random ints (a linear congruential generator) with list.sort
def main():
    xs = []
    x = 42
    for i in range(1_000_000):
        x = (x * 1103515245 + 12345) % 2147483648
        xs.append(x)
    xs.sort()
    print(f"{xs[0]} {xs[500_000]} {xs[999_999]}")


main()
