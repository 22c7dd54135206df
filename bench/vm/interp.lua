-- build a 1M-piece string, each piece made with string.format, then table.concat
local parts = {}
local format = string.format
for i = 0, 999999 do
  parts[#parts + 1] = format("item%d,", i)
end
print(#table.concat(parts))
