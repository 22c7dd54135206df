# particles: a small Vec class with methods that return new vectors, a list of
# particles updated in place (allocation, method calls, float attributes)
class Vec:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def add(self, o):
        return Vec(self.x + o.x, self.y + o.y)

    def scale(self, k):
        return Vec(self.x * k, self.y * k)

    def dot(self, o):
        return self.x * o.x + self.y * o.y


class Particle:
    def __init__(self, pos, vel):
        self.pos = pos
        self.vel = vel


def main():
    ps = []
    for i in range(1000):
        f = float(i)
        ps.append(Particle(Vec(f, 100.0 + f % 7.0), Vec(1.0, f % 3.0)))
    gravity = Vec(0.0, -9.81)
    dt = 0.01
    for _ in range(1000):
        for p in ps:
            p.vel = p.vel.add(gravity.scale(dt))
            p.pos = p.pos.add(p.vel.scale(dt))
            if p.pos.y < 0.0:
                p.pos.y = -p.pos.y
                p.vel.y = -p.vel.y * 0.9
    e = 0.0
    for p in ps:
        e += 0.5 * p.vel.dot(p.vel) + p.pos.y
    print(int(e))


main()
