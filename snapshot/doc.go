// Package snapshot owns the gateway's config: the [Document] (plain Go
// types with JSON field names, read from JSON or YAML by [Decode]), its
// validation with stable codes and paths ([Validate]), its canonical JSON
// form ([Canonical]), the compiler into an immutable [Snapshot], the
// [Store] that holds the current one behind one atomic pointer, and the
// single-writer [Publisher].
//
// # One snapshot per request
//
// A Snapshot holds the gate (host table, routes, answers) and, for every
// route, its target built in the same compile: the cluster, its transport,
// its policies. [Store.ServeHTTP] loads the current snapshot once and lets
// its gate decide, so a request is routed and forwarded entirely by the
// generation it started on, even when another is published mid-request.
//
// # Publishing
//
// The [Publisher] is the only writer. For each revision it validates,
// computes the canonical form (a document equal to the current one ends
// there, as Unchanged), compiles, reconciles runtime state, and swaps the
// pointer. Runtime state — health verdicts, in-flight counts, pooled
// connections — belongs to (cluster ID, destination ID) in an
// [upstream.Registry] and to the cluster ID in a [proxy.Transports], so it
// survives every publish that keeps it. Compile prepares that state without
// showing it; it becomes visible just before the swap, so a refused
// document leaves nothing behind and the old snapshot keeps serving.
//
// A publish costs little more than what changed: the canonical form
// records the bytes of every host and upstream, and a host or upstream
// whose bytes (and the blocks it depends on: the global block, the policy
// blocks, its clusters) equal the applied snapshot's is reused as compiled,
// policy instances and hash tables included, without a second field-by-field
// validation.
//
// Revisions published while another is being processed coalesce: only the
// latest is processed, and each one it replaced gets the outcome
// Superseded. Every revision gets an [Outcome] its caller can wait for
// ([Revision.Wait]) and listeners can observe ([PublisherConfig.OnOutcome]).
//
// # Validation codes
//
// Every problem is a [*ValidationError] with a stable Code and a Path in
// JSON names, such as "route.upstream.unknown" at
// "hosts[2].routes[0].upstream". The codes are listed in codes.go.
//
// [Decode] refuses an empty file or a bare null, although the zero Document
// is valid: a truncated file must not take every host down on reload.
//
// # Compatibility
//
// Fields are only ever added to the document; the zero value of each new
// field keeps the behaviour stored documents had.
package snapshot
