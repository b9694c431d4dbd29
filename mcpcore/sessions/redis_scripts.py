"""The Lua scripts of the Redis session store (:mod:`mcpcore.sessions.redis`): each runs in one
round trip and atomically."""

__all__ = ["CREATE", "REFRESH"]

# Create atomically: the identity's room check, then the global one (each dropping expired index
# entries first and evicting its least recently used session idle long enough), record, indexes.
# Each evicted session is announced on the bus channel (when one is given) and returned.
# Every key is in the namespace's hash slot (a Cluster runs it on one node); the caller deletes
# the evicted sessions' event streams, which live in their own slots.
# KEYS: record, global index, identity index (absent when anonymous).
# ARGV: record json, idle ms, now ms, max sessions, evict-after ms, record key prefix, id,
#       max per identity, bus channel ('' for none), publish command (PUBLISH, or SPUBLISH on a Cluster).
# Returns {status, evicted id...}: status 1 created, 0 global cap, -1 identity cap.
CREATE = """
local now = tonumber(ARGV[3])
local idle = tonumber(ARGV[2])
local prefix = ARGV[6]
local out = {1}
local function room(index, cap)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now - idle)
  if redis.call('ZCARD', index) < cap then return true end
  local oldest = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
  if oldest[1] == nil or now - tonumber(oldest[2]) < tonumber(ARGV[5]) then return false end
  redis.call('ZREM', KEYS[2], oldest[1])
  if index ~= KEYS[2] then redis.call('ZREM', index, oldest[1]) end
  redis.call('DEL', prefix .. oldest[1] .. ':rec')
  out[#out + 1] = oldest[1]
  if ARGV[9] ~= '' then
    redis.call(ARGV[10], ARGV[9], '{"kind":"session","id":"' .. oldest[1] .. '","gone":true}')
  end
  return true
end
if KEYS[3] then
  for _, sid in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    if redis.call('EXISTS', prefix .. sid .. ':rec') == 0 then redis.call('ZREM', KEYS[3], sid) end
  end
  if not room(KEYS[3], tonumber(ARGV[8])) then out[1] = -1 return out end
end
if not room(KEYS[2], tonumber(ARGV[4])) then out[1] = 0 return out end
redis.call('SET', KEYS[1], ARGV[1], 'PX', idle)
redis.call('ZADD', KEYS[2], now, ARGV[7])
if KEYS[3] then
  redis.call('ZADD', KEYS[3], now, ARGV[7])
  redis.call('PEXPIRE', KEYS[3], idle)
end
return out
"""

# Read a record and slide its expiry in one round trip: the record's TTL, its score in the global
# index and (when the caller knows it) in its identity's index. Nothing is touched when it is gone.
# KEYS: record, global index, identity index (absent when unknown or anonymous).
# ARGV: idle ms, now ms, id.
REFRESH = """
local v = redis.call('GET', KEYS[1])
if not v then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
if KEYS[3] then
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[1])
end
return v
"""
