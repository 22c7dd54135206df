-- The Tarantool peer of bench/groupcommit/gc.wo: durable commits from C writer
-- fibers, memtx with wal_mode='fsync' (each commit written and synced before the
-- fiber goes on; Tarantool's WAL thread groups the commits of many fibers), no
-- network (listen=nil).
--
--   tarantool tarantool.lua update|insert C MS DIR
--
-- `update`: C rows are inserted first (one transaction, not timed), then each fiber
-- updates its own row ({'+', 3, 1} on age) in a loop for MS milliseconds. `insert`:
-- each fiber inserts rows (ids from a sequence). Output: the same `key value` lines
-- as gc.wo: `commits` acknowledged before the deadline, `after` those after it,
-- latencies in µs over every commit.
local fiber = require('fiber')
local clock = require('clock')

local mode, c, ms, dir = arg[1], tonumber(arg[2]), tonumber(arg[3]), arg[4]
assert(mode == 'update' or mode == 'insert', 'mode must be update or insert')

box.cfg{
    listen = nil,
    work_dir = dir,
    wal_mode = 'fsync',
    log_level = 2,
    checkpoint_interval = 0,
}

local s = box.schema.space.create('people', {
    format = {{'id', 'unsigned'}, {'name', 'string'}, {'age', 'integer'}, {'score', 'number'}},
})
s:create_index('pk', {sequence = true})

if mode == 'update' then
    box.begin()
    for w = 1, c do
        s:insert{w, 'row' .. (w - 1), 0, 0.0}
    end
    box.commit()
end

local lat = {}
local before, after = 0, 0
local now = clock.monotonic

local function updater(id, deadline)
    local t0 = now()
    while t0 < deadline do
        s:update(id, {{'+', 3, 1}})
        local t1 = now()
        lat[#lat + 1] = (t1 - t0) * 1e6
        if t1 <= deadline then before = before + 1 else after = after + 1 end
        t0 = t1
    end
end

local function inserter(w, deadline)
    local i = 0
    local t0 = now()
    while t0 < deadline do
        s:insert{box.NULL, 'w' .. w .. '-' .. i, i % 100, i * 0.5}
        local t1 = now()
        lat[#lat + 1] = (t1 - t0) * 1e6
        if t1 <= deadline then before = before + 1 else after = after + 1 end
        i = i + 1
        t0 = t1
    end
end

local t0 = now()
local deadline = t0 + ms / 1000
local fibers = {}
for w = 1, c do
    local f
    if mode == 'update' then
        f = fiber.new(updater, w, deadline)
    else
        f = fiber.new(inserter, w - 1, deadline)
    end
    f:set_joinable(true)
    fibers[w] = f
end
for w = 1, c do
    assert(fibers[w]:join())
end
local wall = now() - t0

table.sort(lat)
local function pct(q)
    local n = #lat
    if n == 0 then return -1 end
    local k = math.max(1, math.min(n, math.ceil(n * q / 1000)))
    return math.floor(lat[k])
end
print('writers ' .. c)
print('ms ' .. ms)
print('commits ' .. before)
print('after ' .. after)
print('wall_us ' .. math.floor(wall * 1e6))
print('lat_n ' .. #lat)
for _, kq in ipairs({{'p50', 500}, {'p90', 900}, {'p99', 990}, {'p999', 999}, {'max', 1000}}) do
    print('lat_' .. kq[1] .. ' ' .. pct(kq[2]))
end
os.exit(0)
