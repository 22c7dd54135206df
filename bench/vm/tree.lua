-- a recursive tree build and walk: 20 complete binary trees of depth 16, each built,
-- counted and dropped
local function make(d)
  if d == 0 then
    return { left = false, right = false }
  end
  return { left = make(d - 1), right = make(d - 1) }
end

local function check(n)
  local l, r = n.left, n.right
  if l and r then
    return 1 + check(l) + check(r)
  end
  return 1
end

local total = 0
for _ = 1, 20 do
  total = total + check(make(16))
end
print(total)
