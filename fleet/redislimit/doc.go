// Package redislimit keeps the buckets of cluster-wide rate limits
// (gate.RateLimitCluster, a document's `buckets: cluster`) in Redis, so
// that every gateway of a fleet sharing one Redis counts against one
// bucket per client: a limit of 100/s is 100/s for the fleet, not per
// instance.
//
// It lives in the module github.com/paduraksa/paduraksa/fleet, so that
// an importer of the core packages does not pull the Redis client.
//
// # The decision
//
// [Store.Allow] is one round trip: EVALSHA of a GCRA script (falling
// back to EVAL once after a Redis restart forgot the script). The script
// keeps one key per bucket holding its "theoretical arrival time" in
// microseconds on Redis's own clock (TIME), so the instances' clocks do
// not have to agree; a key expires when its bucket is full again, so an
// idle client leaves nothing behind. It is the same GCRA as the gate's
// local table: a request is allowed when the bucket's instant plus one
// emission interval is no further than burst intervals ahead of now.
// Intervals below a microsecond are counted as one microsecond (limits
// above a million per second per client are not exact).
//
// # Deadlines and failure
//
// Every call runs under the earlier of the caller's deadline and
// [Config.Timeout], and the client honours it on the pool, the dial and
// the socket (go-redis's ContextTimeoutEnabled); commands are not
// retried, since the gate's answer to a failure is its local bucket, not
// a second wait. Connections are pooled ([Config.PoolSize]). A Redis
// that is down costs a refused connection per attempt; one that does not
// answer costs the deadline, which the gate then stops paying for a
// while (see gate.RateLimitStoreConfig).
package redislimit
