"""The Lua scripts of the Redis task store (:mod:`mcpcore.tasks.redis`): each one step, atomic.

A task is one hash, ``{<ns>:t:<id>}`` (its own hash tag, so tasks spread over a Cluster):
``m`` the meta JSON, ``ow`` the owner, ``s`` the status, ``msg`` its message, ``u`` updated (ms),
``o`` the outcome JSON, ``q:<key>``/``a:<key>`` the questions of the current round and the answers
received, ``n`` how many are still pending, ``r`` the round, ``st`` the handler's request state,
``at`` the attempt, ``h``/``d`` the lease holder and deadline (ms). The scripts on it never decode
JSON: results and answers are stored as the bytes they came as.

The shared indexes live in one other slot, ``{<ns>:tasks}``: per owner, its unfinished tasks
(``a:<owner>``, for the cap) and all its tasks (``o:<owner>``, for ``tasks/list``), scored by
expiry; and ``leases``, every task that may need an instance, scored by the time to look at it.
"""

__all__ = ["ADMIT", "ANSWER", "CANCEL", "CLAIM", "CREATE", "DONE", "DROP_DUE", "FINISH", "NOTE", "PARK", "RELEASE",
           "RENEW"]

_CLEAR = """
local function clear(k)
  for _, f in ipairs(redis.call('HKEYS', k)) do
    local p = string.sub(f, 1, 2)
    if p == 'q:' or p == 'a:' then redis.call('HDEL', k, f) end
  end
end
"""

# KEYS: task. ARGV: meta, owner, now, holder, deadline, expiry (epoch ms). Returns 1, or 0 if it exists.
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'm', ARGV[1], 'ow', ARGV[2], 's', 'working', 'u', ARGV[3], 'at', '1', 'h', ARGV[4],
           'd', ARGV[5], 'r', '0', 'n', '0')
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 1
"""

# KEYS: owner's unfinished, owner's all, leases. ARGV: id, expiry, now, cap, deadline.
# Returns 1 admitted (indexed), 0 the owner is at its cap.
ADMIT = """
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
for i = 1, 2 do
  local top = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if top[2] then redis.call('PEXPIREAT', KEYS[i], top[2]) end
end
return 1
"""

# KEYS: owner's unfinished, leases. ARGV: id. The task ended: out of both.
DONE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""

# KEYS: leases. ARGV: id, now. Forget a lease entry unless someone rescheduled it meanwhile.
DROP_DUE = """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1
"""

# KEYS: task. ARGV: attempt, status, outcome, message, now. Returns 1 written, 0 refused.
FINISH = _CLEAR + """
local cur = redis.call('HMGET', KEYS[1], 's', 'at')
if not cur[1] or cur[1] == 'completed' or cur[1] == 'failed' or cur[1] == 'cancelled' then return 0 end
if cur[2] ~= ARGV[1] then return 0 end
clear(KEYS[1])
redis.call('HSET', KEYS[1], 's', ARGV[2], 'o', ARGV[3], 'msg', ARGV[4], 'u', ARGV[5], 'n', '0')
redis.call('HDEL', KEYS[1], 'h', 'd')
return 1
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

# KEYS: task. ARGV: holder, now, lease deadline, then key, response pairs. Returns the attempt the
# holder must run when the last pending question got its answer, else 0.
ANSWER = """
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
redis.call('HSET', KEYS[1], 's', 'working', 'u', ARGV[2], 'at', at, 'h', ARGV[1], 'd', ARGV[3])
return at
"""

# KEYS: task. ARGV: message, now. Returns the status before (nil: unknown).
CANCEL = _CLEAR + """
local s = redis.call('HGET', KEYS[1], 's')
if not s then return false end
if s == 'completed' or s == 'failed' or s == 'cancelled' then return s end
clear(KEYS[1])
redis.call('HSET', KEYS[1], 's', 'cancelled', 'msg', ARGV[1], 'u', ARGV[2], 'n', '0')
redis.call('HDEL', KEYS[1], 'h', 'd')
return s
"""

# KEYS: task. ARGV: attempt, message, now.
NOTE = """
local cur = redis.call('HMGET', KEYS[1], 's', 'at')
if cur[1] ~= 'working' or cur[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'msg', ARGV[2], 'u', ARGV[3])
return 1
"""

# KEYS: task. ARGV: holder, attempt, new deadline. Returns 1 still held, 0 lost.
RENEW = """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'h')
if cur[1] ~= 'working' or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[3])
return 1
"""

# KEYS: task. ARGV: holder, attempt, now. The holder lets its lease lapse at once.
RELEASE = """
local cur = redis.call('HMGET', KEYS[1], 's', 'at', 'h')
if cur[1] ~= 'working' or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[3])
return 1
"""

# KEYS: task. ARGV: holder, now, new deadline. Take over a working task whose lease lapsed.
# Returns {'gone'}, {'idle', status, owner}, {'held', deadline} or {'claimed', attempt}.
CLAIM = """
local cur = redis.call('HMGET', KEYS[1], 's', 'd', 'at', 'ow')
if not cur[1] then return {'gone'} end
if cur[1] ~= 'working' then return {'idle', cur[1], cur[4]} end
local now = tonumber(ARGV[2])
if cur[2] and tonumber(cur[2]) > now then return {'held', cur[2]} end
local at = tonumber(cur[3]) + 1
redis.call('HSET', KEYS[1], 'h', ARGV[1], 'd', ARGV[3], 'at', at)
return {'claimed', tostring(at)}
"""
