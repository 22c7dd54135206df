-- particles: a small Vec class (metatable) with methods that return new vectors,
-- a list of particles updated in place (allocation, method calls, Float fields)
local Vec = {}
Vec.__index = Vec

local function vec(x, y)
  return setmetatable({ x = x, y = y }, Vec)
end

function Vec:add(o)
  return vec(self.x + o.x, self.y + o.y)
end

function Vec:scale(k)
  return vec(self.x * k, self.y * k)
end

function Vec:dot(o)
  return self.x * o.x + self.y * o.y
end

local ps = {}
for i = 0, 999 do
  local f = i + 0.0
  ps[#ps + 1] = { pos = vec(f, 100.0 + f % 7.0), vel = vec(1.0, f % 3.0) }
end
local gravity = vec(0.0, -9.81)
local dt = 0.01
for _ = 1, 1000 do
  for _, p in ipairs(ps) do
    p.vel = p.vel:add(gravity:scale(dt))
    p.pos = p.pos:add(p.vel:scale(dt))
    if p.pos.y < 0.0 then
      p.pos.y = -p.pos.y
      p.vel.y = -p.vel.y * 0.9
    end
  end
end
local e = 0.0
for _, p in ipairs(ps) do
  e = e + 0.5 * p.vel:dot(p.vel) + p.pos.y
end
print(string.format("%d", e < 0 and math.ceil(e) or math.floor(e)))
