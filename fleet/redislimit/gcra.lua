-- GCRA: one bucket per key. KEYS[1] holds the bucket's theoretical
-- arrival time (TAT) in microseconds on this server's clock; a missing
-- key is a full bucket. ARGV[1] is the emission interval (us per token),
-- ARGV[2] the burst. Returns 1 when a token was taken, 0 when none was
-- left. A refusal writes nothing.
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end
local nextTat = tat + interval
if nextTat > now + interval * burst then
  return 0
end
-- The key lives until the bucket is full again.
redis.call('SET', KEYS[1], string.format('%d', nextTat), 'PX', math.ceil((nextTat - now) / 1000) + 1)
return 1
