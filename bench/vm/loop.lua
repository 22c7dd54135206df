-- 10M-iteration Int loop, written with a numeric for
local s = 0
for i = 0, 10000000 - 1 do
  s = s + i
end
print(s)
