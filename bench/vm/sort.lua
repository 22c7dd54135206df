-- sort 1M pseudo-random integers (a linear congruential generator) with table.sort
local xs = {}
local x = 42
for i = 1, 1000000 do
  x = (x * 1103515245 + 12345) % 2147483648
  xs[i] = x
end
table.sort(xs)
print(xs[1] .. " " .. xs[500001] .. " " .. xs[1000000])
