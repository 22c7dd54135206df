local t = string.rep("abcdefghij", 1000000)
local n = 0
for c in t:gmatch(".") do
  if c == "a" then
    n = n + 1
  end
end
print(n)
