-- build a 1M-piece string, each piece made with `..`, then table.concat
local parts = {}
for i = 0, 999999 do
  parts[#parts + 1] = "k" .. i .. ";"
end
print(#table.concat(parts))
