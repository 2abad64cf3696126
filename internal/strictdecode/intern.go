package strictdecode

// interned keeps the last short string of each of its slots, so that a
// value written many times in a document (an address, an ID, a path) is
// one string instead of one allocation each: a document of 500 hosts with
// two destinations each has 1000 addresses and 1000 IDs of two values.
// It is a fixed table in the decoder's state: a miss costs a comparison,
// and a value only replaces the one in its slot.
type interned [64]string

// maxInterned is the longest string interned: longer ones are rarely
// repeated (certificates, long paths) and cost more to compare.
const maxInterned = 32

// str returns b as a string, the one of its slot when that is equal.
func (t *interned) str(b []byte) string {
	if len(b) <= 1 || len(b) > maxInterned {
		return string(b) // a string of one byte is not allocated
	}
	slot := &t[(uint(len(b))*5+uint(b[0])*3+uint(b[len(b)-1]))%uint(len(t))]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}
