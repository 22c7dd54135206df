# a recursive tree build and walk: 20 complete binary trees of depth 16, each built,
# counted and dropped
class Node:
    def __init__(self, left, right):
        self.left = left
        self.right = right


def make(d):
    if d == 0:
        return Node(None, None)
    return Node(make(d - 1), make(d - 1))


def check(n):
    l, r = n.left, n.right
    if l is not None and r is not None:
        return 1 + check(l) + check(r)
    return 1


def main():
    total = 0
    for _ in range(20):
        total += check(make(16))
    print(total)


main()
