# a method-call-heavy object loop: an account with small methods, 3M iterations
class Account:
    def __init__(self):
        self.balance = 0
        self.ops = 0

    def deposit(self, v):
        self.balance += v
        self.ops += 1

    def withdraw(self, v):
        if v > self.balance:
            return False
        self.balance -= v
        self.ops += 1
        return True

    def total(self):
        return self.balance


def main():
    a = Account()
    refused = 0
    for i in range(3_000_000):
        a.deposit(i % 100)
        if not a.withdraw(i % 37 + a.total() % 13):
            refused += 1
    print(f"{a.total()} {a.ops} {refused}")


main()
