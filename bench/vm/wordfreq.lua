-- word frequency over a text file (arg[1], ~10 MB made by gen_words.py): every
-- whitespace-separated word counted in a table, report the most frequent word
local f = assert(io.open(arg[1], "rb"))
local text = f:read("a")
f:close()
local counts = {}
local total = 0
for w in text:gmatch("%S+") do
  counts[w] = (counts[w] or 0) + 1
  total = total + 1
end
local distinct, best, best_n = 0, "", 0
for w, n in pairs(counts) do
  distinct = distinct + 1
  if n > best_n then
    best, best_n = w, n
  end
end
print(total .. " " .. distinct .. " " .. best .. " " .. best_n)
