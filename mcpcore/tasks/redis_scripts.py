"""The Lua scripts of the Redis task store (:mod:`mcpcore.tasks.redis`): each one step, atomic.

A task is one hash, ``{<ns>:t:<id>}`` (its own hash tag, so tasks spread over a Cluster):
``m`` the meta JSON, ``ow`` the owner, ``ac`` the account it counts against, ``ms`` the meta's
size, ``s`` the status, ``msg`` its message, ``u`` updated (ms), ``o`` the outcome JSON,
``q:<key>``/``a:<key>`` the questions of the current round and the answers received, ``n`` how
many are still pending, ``r`` the round, ``st`` the handler's request state, ``at`` the attempt,
``h``/``d`` the lease holder and deadline. The scripts on it never decode JSON: results and
answers are stored as the bytes they came as.

Lease deadlines, and the schedule of when to look at a lease, are on Redis' clock (``TIME``,
read inside the script), so instances whose clocks disagree agree on whether a lease lapsed.
Creation, update and expiry times stay on the caller's clock: they are shown to clients, and an
instance's skew only moves them by that skew.

The shared indexes live in one other slot, ``{<ns>:tasks}``: per account, its unfinished tasks
(``a:<account>``, for the cap) and all its tasks (``o:<account>``, for ``tasks/list`` and the
bounds), both scored by expiry, and the bytes each task takes (``b:<account>``: id -> bytes,
``=`` -> their total); and ``leases``, every task that may need an instance, scored by the time
(Redis' clock) to look at it.
"""

__all__ = ["ADMIT", "ANSWER", "CANCEL", "CLAIM", "CREATE", "DONE", "DROP_DUE", "DUE", "FINISH", "KEEP", "NEXT", "NOTE",
           "PARK", "RELEASE", "RENEW", "SCHEDULE"]

_CLOCK = """
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

_CLEAR = """
local function clear(k)
  for _, f in ipairs(redis.call('HKEYS', k)) do
    local p = string.sub(f, 1, 2)
    if p == 'q:' or p == 'a:' then redis.call('HDEL', k, f) end
  end
end
"""

# Index helpers on KEYS[1] (unfinished), KEYS[2] (all), KEYS[4] (bytes). room() forgets the
# account's soonest-expiring finished tasks (never `keep`) until fewer than `count` are kept and
# `size` more bytes fit in `limit`; it appends what it forgot to `out`. The first entries of the
# all-index hold at least one finished task whenever it holds more than the unfinished ones.
_ACCOUNT = """
local function forget(t)
  local sz = redis.call('HGET', KEYS[4], t)
  if sz then
    redis.call('HINCRBY', KEYS[4], '=', -tonumber(sz))
    redis.call('HDEL', KEYS[4], t)
  end
  redis.call('ZREM', KEYS[2], t)
  redis.call('ZREM', KEYS[1], t)
end
local function room(count, size, limit, keep, out)
  local active = {}
  for _, t in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do active[t] = true end
  local total = tonumber(redis.call('HGET', KEYS[4], '=') or '0')
  local n = redis.call('ZCARD', KEYS[2])
  local start = 0
  while n >= count or total + size > limit do
    local chunk = redis.call('ZRANGE', KEYS[2], start, start + 199)
    if #chunk == 0 then return end
    for _, t in ipairs(chunk) do
      if n < count and total + size <= limit then return end
      if active[t] or t == keep then
        start = start + 1
      else
        total = total - tonumber(redis.call('HGET', KEYS[4], t) or '0')
        forget(t)
        n = n - 1
        table.insert(out, t)
      end
    end
  end
end
local function expire_with_latest()
  local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if top[2] then
    redis.call('PEXPIREAT', KEYS[2], top[2])
    redis.call('PEXPIREAT', KEYS[4], top[2])
  end
  top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', KEYS[1], top[2]) end
end
"""

# KEYS: task. ARGV: meta, owner, now, holder, lease ms, expiry (epoch ms), account, meta size.
# Returns 1, or 0 if it exists.
CREATE = _CLOCK + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'ow', ARGV[2], 's', 'working', 'u', ARGV[3], 'at', '1', 'h', ARGV[4],
           'd', clock() + tonumber(ARGV[5]), 'r', '0', 'n', '0', 'ac', ARGV[7], 'ms', ARGV[8])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 1
"""

# KEYS: account's unfinished, account's all, leases, account's bytes. ARGV: id, expiry, now,
# unfinished cap, lease ms, kept cap, bytes cap, size. Returns {'too_many'}, {'too_large'} or
# {'created', forgotten ids...} (the caller deletes the forgotten tasks' hashes).
ADMIT = _CLOCK + _ACCOUNT + """
local now = tonumber(ARGV[3])
for _, t in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do forget(t) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local active = redis.call('ZRANGE', KEYS[1], 0, -1)
if #active >= tonumber(ARGV[4]) then return {'too_many'} end
local size = tonumber(ARGV[8])
local limit = tonumber(ARGV[7])
local busy = size
for _, t in ipairs(active) do busy = busy + tonumber(redis.call('HGET', KEYS[4], t) or '0') end
if busy > limit then return {'too_large'} end
local out = {'created'}
room(tonumber(ARGV[6]), size, limit, '', out)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], clock() + tonumber(ARGV[5]), ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], size)
redis.call('HINCRBY', KEYS[4], '=', size)
expire_with_latest()
return out
"""

# KEYS: account's unfinished, leases. ARGV: id. The task ended: out of the unfinished and the schedule.
DONE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""

# KEYS: account's unfinished, account's all, leases, account's bytes. ARGV: id, size, bytes cap.
# A task finished taking `size` bytes: out of the unfinished and the schedule, its bytes counted,
# older finished tasks forgotten to make room. Returns the forgotten ids.
KEEP = _ACCOUNT + """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local old = redis.call('HGET', KEYS[4], ARGV[1])
local out = {}
if not old then return out end
local size = tonumber(ARGV[2])
redis.call('HSET', KEYS[4], ARGV[1], size)
redis.call('HINCRBY', KEYS[4], '=', size - tonumber(old))
room(redis.call('ZCARD', KEYS[2]) + 1, 0, tonumber(ARGV[3]), ARGV[1], out)
return out
"""

# KEYS: leases. ARGV: id. Forget a lease entry unless someone rescheduled it meanwhile.
DROP_DUE = _CLOCK + """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= clock() then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
"""

# KEYS: leases. ARGV: id, lease ms. Look at the task's lease after `lease ms`. Returns the time.
SCHEDULE = _CLOCK + """
local at = clock() + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], at, ARGV[1])
return at
"""

# KEYS: leases. ARGV: limit. The tasks whose lease is due now.
DUE = _CLOCK + """
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', clock(), 'LIMIT', 0, tonumber(ARGV[1]))
"""

# KEYS: leases. Milliseconds until the first lease is due (nil: none scheduled).
NEXT = _CLOCK + """
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if not first[2] then return false end
return tonumber(first[2]) - clock()
"""

# KEYS: task. ARGV: attempt, status, outcome, message, now. Returns {account, size} written, 0 refused.
FINISH = _CLEAR + """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'ac', 'ow', 'ms')
if not cur[1] or cur[1] == 'completed' or cur[1] == 'failed' or cur[1] == 'cancelled' then return 0 end
if cur[2] ~= ARGV[1] then return 0 end
clear(KEYS[1])
redis.call('HSET', KEYS[1], 's', ARGV[2], 'o', ARGV[3], 'msg', ARGV[4], 'u', ARGV[5], 'n', '0')
redis.call('HDEL', KEYS[1], 'h', 'd', 'st')
return {cur[3] or cur[4], tonumber(cur[5] or '0') + string.len(ARGV[3])}
"""

# KEYS: task. ARGV: attempt, state, has state ('1'/'0'), message, now, then key, request pairs.
PARK = _CLEAR + """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'r')
if cur[1] ~= 'working' or cur[2] ~= ARGV[1] then return 0 end
clear(KEYS[1])
local n = 0
for i = 6, #ARGV, 2 do
  redis.call('HSET', KEYS[1], 'q:' .. ARGV[i], ARGV[i + 1])
  n = n + 1
end
redis.call('HSET', KEYS[1], 's', 'input_required', 'n', n, 'msg', ARGV[4], 'u', ARGV[5],
           'r', tonumber(cur[3] or '0') + 1)
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'st', ARGV[2]) else redis.call('HDEL', KEYS[1], 'st') end
redis.call('HDEL', KEYS[1], 'h', 'd')
return 1
"""

# KEYS: task. ARGV: holder, now, lease ms, then key, response pairs. Returns the attempt the
# holder must run when the last pending question got its answer, else 0.
ANSWER = _CLOCK + """
local cur = redis.call('HMGET', KEYS[1], 's', 'n', 'at')
if cur[1] ~= 'input_required' then return 0 end
local n = tonumber(cur[2] or '0')
for i = 4, #ARGV, 2 do
  local a = 'a:' .. ARGV[i]
  if redis.call('HEXISTS', KEYS[1], 'q:' .. ARGV[i]) == 1 and redis.call('HEXISTS', KEYS[1], a) == 0 then
    redis.call('HSET', KEYS[1], a, ARGV[i + 1])
    n = n - 1
  end
end
redis.call('HSET', KEYS[1], 'n', n)
if n > 0 then return 0 end
local at = tonumber(cur[3]) + 1
redis.call('HSET', KEYS[1], 's', 'working', 'u', ARGV[2], 'at', at, 'h', ARGV[1], 'd', clock() + tonumber(ARGV[3]))
return at
"""

# KEYS: task. ARGV: message, now. Returns {status before, account} (nil: unknown).
CANCEL = _CLEAR + """
local cur = redis.call('HMGET', KEYS[1], 's', 'ac', 'ow')
local s = cur[1]
if not s then return false end
if s == 'completed' or s == 'failed' or s == 'cancelled' then return {s, cur[2] or cur[3]} end
clear(KEYS[1])
redis.call('HSET', KEYS[1], 's', 'cancelled', 'msg', ARGV[1], 'u', ARGV[2], 'n', '0')
redis.call('HDEL', KEYS[1], 'h', 'd', 'st')
return {s, cur[2] or cur[3]}
"""

# KEYS: task. ARGV: attempt, message, now.
NOTE = """
local cur = redis.call('HMGET', KEYS[1], 's', 'at')
if cur[1] ~= 'working' or cur[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'msg', ARGV[2], 'u', ARGV[3])
return 1
"""

# KEYS: task. ARGV: holder, attempt, lease ms. Returns the new deadline while still held (lapsed
# or not: nobody took it over), 0 when lost.
RENEW = _CLOCK + """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'h')
if cur[1] ~= 'working' or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[1] then return 0 end
local d = clock() + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'd', d)
return d
"""

# KEYS: task. ARGV: holder, attempt. The holder lets its lease lapse at once. Returns the time, or 0.
RELEASE = _CLOCK + """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'h')
if cur[1] ~= 'working' or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[1] then return 0 end
local now = clock()
redis.call('HSET', KEYS[1], 'd', now)
return now
"""

# KEYS: task. ARGV: holder, lease ms, the attempt the holder runs itself ('0': none). Take over a
# working task whose lease lapsed; the holder's own running attempt is renewed instead. Returns
# {'gone'}, {'idle', status, account}, {'held', deadline} or {'claimed', attempt, deadline}.
CLAIM = _CLOCK + """
local cur = redis.call('HMGET', KEYS[1], 's', 'd', 'at', 'ac', 'h', 'ow')
if not cur[1] then return {'gone'} end
if cur[1] ~= 'working' then return {'idle', cur[1], cur[4] or cur[6]} end
local now = clock()
local d = now + tonumber(ARGV[2])
if cur[5] == ARGV[1] and cur[3] == ARGV[3] then
  redis.call('HSET', KEYS[1], 'd', d)
  return {'held', tostring(d)}
end
if cur[2] and tonumber(cur[2]) > now then return {'held', cur[2]} end
local at = tonumber(cur[3]) + 1
redis.call('HSET', KEYS[1], 'h', ARGV[1], 'd', d, 'at', at)
return {'claimed', tostring(at), tostring(d)}
"""
