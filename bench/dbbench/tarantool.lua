-- The Tarantool peer of samples/db-bench/db_bench.wo: the same modes over the same
-- schema (memtx spaces; tree indexes on items.k and items.bucket, a unique one on
-- buckets.tag), in the server's own Lua with no network, fibers for concurrency,
-- printing the same `<op> <count> <ops/s> <p50 µs> <p99 µs>` lines from the same
-- histogram.
--
--   tarantool tarantool.lua [--data DIR] MODE ARGS… [--rows R]
--
-- Without --data (the RAM leg): wal_mode='none' in a fresh temporary directory.
-- With --data DIR (the durable leg): wal_mode='fsync' in DIR, no automatic
-- snapshots. Tarantool 2.x does not check a foreign key here (wo does).
local clock = require('clock')
local fiber = require('fiber')
local fio = require('fio')

local BUCKETS, PER_KEY, DEFAULT_ROWS, BATCH, LATENCY_OPS = 64, 10, 100000, 1000, 100000
local EXACT, SUB = 64, 16

local rows, data, rest = DEFAULT_ROWS, nil, {}
do
    local i = 1
    while i <= #arg do
        if arg[i] == '--rows' then
            rows = math.max(PER_KEY, tonumber(arg[i + 1])); i = i + 2
        elseif arg[i] == '--data' then
            data = arg[i + 1]; i = i + 2
        else
            rest[#rest + 1] = arg[i]; i = i + 1
        end
    end
end

local function usage()
    io.stderr:write('usage: tarantool tarantool.lua [--data DIR] seed N | read N | query N | write N | wal N | verify | verify-acked M | mix N C | wmix N C | boot  [--rows R]\n')
    os.exit(64)
end

local tmp, existing
if data then
    existing = #fio.glob(fio.pathjoin(data, '*.xlog')) > 0
    fio.mktree(data)
    box.cfg{listen = nil, work_dir = data, wal_mode = 'fsync', checkpoint_interval = 0, log_level = 2,
            memtx_memory = 2 * 1024 * 1024 * 1024}
else
    tmp = fio.tempdir()
    box.cfg{listen = nil, work_dir = tmp, wal_mode = 'none', checkpoint_interval = 0, log_level = 2,
            memtx_memory = 2 * 1024 * 1024 * 1024}
end

local buckets = box.space.buckets
if buckets == nil then
    box.begin()
    buckets = box.schema.space.create('buckets', {format = {{'id', 'unsigned'}, {'tag', 'string'}}})
    buckets:create_index('pk')
    buckets:create_index('tag', {parts = {'tag'}, unique = true})
    local items = box.schema.space.create('items', {format = {{'id', 'unsigned'}, {'k', 'integer'},
                                                              {'v', 'integer'}, {'bucket', 'unsigned'}}})
    items:create_index('pk', {sequence = true})
    items:create_index('k', {parts = {'k'}, unique = false})
    items:create_index('bucket', {parts = {'bucket'}, unique = false})
    local meta = box.schema.space.create('meta', {format = {{'id', 'unsigned'}, {'count', 'integer'},
                                                            {'checksum', 'integer'}}})
    meta:create_index('pk')
    meta:insert{1, 0, 0}
    for i = 0, BUCKETS - 1 do buckets:insert{i + 1, 'bucket-' .. i} end
    box.commit()
end
local items, meta = box.space.items, box.space.meta

-- Tarantool 2.6 reopens the last xlog of an existing directory without O_SYNC, so
-- with wal_mode='fsync' the commits of a restarted server are written but never
-- synced (strace: `openat(…xlog, O_RDWR)`, no fsync, each writev 10 µs). So every
-- durable write mode must start from an empty directory (bench/run.py does); a
-- write mode on an existing one says it is not measuring durable commits.
if existing and rest[1] ~= 'boot' and rest[1] ~= 'verify' and rest[1] ~= 'verify-acked' then
    io.stderr:write('tarantool.lua: warning: ' .. data .. ' existed; Tarantool 2.6 does not ' ..
                    'sync the commits of a reopened xlog\n')
end

local function now_us() return clock.monotonic() * 1e6 end

local function new_hist()
    local h = {}
    for s = 0, EXACT + 58 * SUB - 1 do h[s] = 0 end
    return h
end

local function note(h, us)
    us = math.floor(us)
    local s
    if us < EXACT then
        s = math.max(us, 0)
    else
        local low, top = EXACT, 6
        while us >= 2 * low do low = low * 2; top = top + 1 end
        s = EXACT + (top - 6) * SUB + math.floor((us - low) / (low / SUB))
    end
    h[s] = h[s] + 1
end

local function bound(s)
    if s < EXACT then return s end
    local low = EXACT * 2 ^ math.floor((s - EXACT) / SUB)
    return low + ((s - EXACT) % SUB + 1) * (low / SUB) - 1
end

local function percentile(h, n, q)
    local want = math.max(1, math.ceil(n * q / 100))
    local seen = 0
    for s = 0, EXACT + 58 * SUB - 1 do
        seen = seen + h[s]
        if seen >= want then return bound(s) end
    end
    return -1
end

local function report(op, n, elapsed_us, h, timed)
    print(string.format('%s %d %d %d %d', op, n, math.floor(n * 1e6 / math.max(elapsed_us, 1)),
                        percentile(h, timed, 50), percentile(h, timed, 99)))
end

local function count() return meta:get(1)[2] end
local function key_of(i, r) return i % math.max(1, math.floor(r / PER_KEY)) end

local function load(start, n, r, h)
    local i = start
    while i < start + n do
        box.begin()
        local stop = math.min(i + BATCH, start + n)
        local added, sum = 0, 0
        while i < stop do
            local a = h and now_us()
            items:insert{box.NULL, key_of(i, r), i, i % BUCKETS + 1}
            if h then note(h, now_us() - a) end
            added, sum, i = added + 1, sum + i, i + 1
        end
        meta:update(1, {{'+', 2, added}, {'+', 3, sum}})
        box.commit()
    end
end

local function ensure_rows()
    local have = count()
    if have == 0 then load(1, rows, rows, nil); return rows end
    return have
end

local function bump(id)
    box.begin()
    items:update(id, {{'+', 3, 1}})
    meta:update(1, {{'+', 3, 1}})
    box.commit()
end

local function ops(op, n, have, h)
    local keys = math.max(1, math.floor(have / PER_KEY))
    local sum, nxt = 0, count()
    local kidx = items.index.k
    for i = 0, n - 1 do
        local a = h and now_us()
        if op == 'read' then
            sum = sum + items:get(math.random(1, have))[3]
        elseif op == 'query' then
            for _, t in kidx:pairs(math.random(0, keys - 1)) do sum = sum + t[3] end
        elseif i % 2 == 0 then
            nxt = nxt + 1
            box.begin()
            items:insert{box.NULL, key_of(nxt, have), nxt, nxt % BUCKETS + 1}
            meta:update(1, {{'+', 2, 1}, {'+', 3, nxt}})
            box.commit()
        else
            local t = kidx:select(math.random(0, keys - 1), {limit = 1})[1]
            if t then bump(t[1]) end
        end
        if h then note(h, now_us() - a) end
    end
    return sum
end

local function workers(n, c, have, every, h)
    local fs, sum = {}, 0
    for w = 0, c - 1 do
        local share = math.floor(n / c) + ((w < n % c) and 1 or 0)
        local f = fiber.new(function()
            local s = 0
            for i = 0, share - 1 do
                local a = h and now_us()
                local id = math.random(1, have)
                if i % every == 0 then bump(id) else s = s + items:get(id)[3] end
                if h then note(h, now_us() - a) end
            end
            return s
        end)
        f:set_joinable(true)
        fs[#fs + 1] = f
    end
    for _, f in ipairs(fs) do
        local _, s = f:join()
        sum = sum + s
    end
    return sum
end

local function verify()
    local n, sum = 0, 0
    for _, t in items:pairs() do n, sum = n + 1, sum + t[3] end
    local m = meta:get(1)
    if n ~= m[2] or sum ~= m[3] then
        print(string.format('PROBLEM: %d items summing to %d; the meta row says %d and %d', n, sum, m[2], m[3]))
        return 1
    end
    print(string.format('ok %d items', n))
    return 0
end

math.randomseed(42)
local mode, code = rest[1], 0
if mode == 'seed' and #rest == 2 then
    local n, h = tonumber(rest[2]), new_hist()
    local t0 = now_us()
    load(count() + 1, n, n, h)
    report('seed', n, now_us() - t0, h, n)
elseif (mode == 'read' or mode == 'query' or mode == 'write') and #rest == 2 then
    local n, have = tonumber(rest[2]), ensure_rows()
    local t0 = now_us()
    local sum = ops(mode, n, have, nil)
    local elapsed = now_us() - t0
    local h, m = new_hist(), math.min(n, LATENCY_OPS)
    sum = sum + ops(mode, m, have, h)
    report(mode, n, elapsed, h, m)
    io.stderr:write(mode .. ' checksum ' .. sum .. '\n')
elseif mode == 'wal' and #rest == 2 then
    local n, h = tonumber(rest[2]), new_hist()
    local start = count() + 1
    local t0 = now_us()
    for i = start, start + n - 1 do
        local a = now_us()
        box.begin()
        items:insert{box.NULL, i, i, i % BUCKETS + 1}
        meta:update(1, {{'+', 2, 1}, {'+', 3, i}})
        box.commit()
        note(h, now_us() - a)
        print('acked ' .. i)
        io.stdout:flush()
    end
    report('wal', n, now_us() - t0, h, n)
elseif mode == 'verify' and #rest == 1 then
    code = verify()
elseif mode == 'verify-acked' and #rest == 2 then
    for i = 1, tonumber(rest[2]) do
        local t = items.index.k:select(i, {limit = 1})[1]
        if t == nil or t[3] ~= i then
            print('PROBLEM: acknowledged item ' .. i .. ' is missing or wrong')
            code = 1
            break
        end
    end
    if code == 0 then code = verify() end
elseif (mode == 'mix' or mode == 'wmix') and #rest == 3 then
    local n, c, have = tonumber(rest[2]), math.max(1, tonumber(rest[3])), ensure_rows()
    local every = mode == 'mix' and 10 or 1
    local h = new_hist()
    local t0 = now_us()
    local sum = workers(n, c, have, every, data and h or nil)
    local elapsed, timed = now_us() - t0, n
    if not data then
        timed = math.min(n, LATENCY_OPS)
        sum = sum + workers(timed, c, have, every, h)
    end
    report(mode, n, elapsed, h, timed)
    io.stderr:write(mode .. ' checksum ' .. sum .. '\n')
elseif mode == 'boot' and #rest == 1 then
    print('boot ' .. count() .. ' rows')
else
    usage()
end
io.stdout:flush()
if tmp then fio.rmtree(tmp) end
os.exit(code)
