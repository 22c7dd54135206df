def main():
    m = {}
    for i in range(1_000_000):
        m["k" + str(i)] = i
    total = 0
    for i in range(1_000_000):
        total = total + m["k" + str(i)]
    print(total)

main()
