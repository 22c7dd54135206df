local m = {}
local tostring = tostring
for i = 0, 999999 do
  m["k" .. tostring(i)] = i
end
local sum = 0
for i = 0, 999999 do
  sum = sum + m["k" .. tostring(i)]
end
print(sum)
