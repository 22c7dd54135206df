t = "abcdefghij" * 1_000_000
n = 0
for c in t:
    if c == "a":
        n += 1
print(n)
