// Package clock is the time source of the library's timers and rate
// limits: health's probe schedule, passive windows and reactivation, and
// the gate's token buckets read the time and start timers through a
// [Clock], so that a test can run them on a clock it moves itself.
//
// # Main types
//
// The zero [Clock] is the real clock: package time, which inside a
// testing/synctest bubble is the bubble's fake time, so code that holds a
// zero Clock is tested under synctest as it runs in production. [New]
// makes a Clock that reads a [Source] instead; [Manual] is a Source that
// moves only when told to, for tests that step time by hand outside a
// bubble. [WithNow] keeps the real timers and takes the time of day from
// a function, which is what a public Clock func() time.Time option means.
//
// # Cost
//
// On the zero Clock, Now and Since are time.Now and time.Since behind one
// nil check: no allocation, no indirect call, and Since keeps time.Since's
// monotonic fast path, so the request path pays nothing for the
// injection.
//
// # Concurrency
//
// A Clock is a small value, copied freely and safe for concurrent use
// when its Source is; Manual is.
package clock
