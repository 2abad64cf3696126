// Package seam is the key to the plumbing that the library's own packages
// share across package lines and a user must not call: the slot in which
// health keeps its per-destination state, the stamp of when a destination
// became available, and the hook that runs each time a cluster's members
// view is replaced (methods of upstream.Destination and upstream.Cluster,
// driven by the health package).
//
// Those methods take a [Key]. Only a package of this module can import
// seam, so only it can name the type, and only [Open] makes a Key that
// opens anything: given any other Key (the zero Key, which generic code
// outside the module could conjure), the methods do nothing. A user sees
// them in the documentation and cannot use them, so the plumbing can
// change without breaking anyone.
//
// A Key is one byte passed by value: checking it costs a compare, no
// allocation.
package seam

// Key opens the plumbing methods that take one; see the package doc.
type Key struct{ open bool }

// Open returns the key of the library's own packages.
func Open() Key { return Key{open: true} }

// Opens reports whether k is the key [Open] returns.
func (k Key) Opens() bool { return k.open }
