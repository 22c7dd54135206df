local t = string.rep("abcdefghij", 100000)
local n = 0
for i = 1, #t do
  if t:sub(i, i) == "a" then
    n = n + 1
  end
end
print(n)
