-- Lua's strings are bytes: its idiom walks them by byte, the `é` included.
local t = string.rep("abcdefghij", 100000) .. "é"
local n = 0
for i = 1, #t do
  if t:sub(i, i) == "a" then
    n = n + 1
  end
end
print(n)
