// Package strictdecode reads JSON and YAML documents into a Go value of
// any struct type strictly, and says what is wrong with each one that it
// does not take: the decoders of package config's Document, written for
// any type so that other documents can use them.
//
// encoding/json ignores unknown fields, matches names regardless of case
// and stops at the first type error; go.yaml.in/yaml/v2 reads YAML 1.1
// into generic values. A config document needs the opposite of the first
// three (a misspelt field must not be dropped silently, and a refusal
// lists every problem with its path) and YAML read with JSON's field
// names and types. [Decoder.Decode] gives both, as problems with stable
// codes ([CodeFieldUnknown] and the others) at JSON paths
// ("hosts[2].routes[0].bogus").
//
// # Two paths
//
// The general path is built from the standard readers: YAML is read by
// go.yaml.in/yaml/v2 into generic values and converted to JSON with the
// target type in mind (a number or boolean where a string is expected
// becomes its text, as sigs.k8s.io/yaml converts for its Unmarshal); the
// JSON is then walked token by token against the type, which finds every
// unknown, mistyped or repeated field, and what is left decoded by
// encoding/json. It reads every document and describes every problem, and
// costs what its layers cost: the YAML parser's generic values, the
// conversion, the JSON text, the walk, encoding/json's reflection.
//
// The fast path (json.go, yaml.go) reads a document straight into its Go
// value in one pass, directed by a plan of the type made once by [New]. It
// reads only what it is sure of: a document without a single problem,
// written in the plain forms configs are written in (block mappings and
// sequences, plain, quoted and literal scalars, flow collections on one
// line, comments). At the first thing it is not sure of it gives up, and
// the document is read again by the general path, which then finds and
// describes its problems. So a fast decode never has an error to report,
// and both paths give the same value for every input: the fuzz targets of
// package config (FuzzDecodeFastEqualsGeneral) and of this package hold
// them to it, and the general YAML path to sigs.k8s.io/yaml's Unmarshal.
//
// The fast path exists for its cost. An apply of a document (bytes in, the
// new snapshot serving) has a budget of 5 ms at 500 hosts and 20 ms at
// 2000, and the general path alone spends more than that decoding. Decode
// of the reference fleet (hosts with one route each, an upstream of two
// destinations each; package config's BenchmarkDecode, one core of a
// shared 2-core AMD EPYC, Go 1.26, medians of 6):
//
//	document            fast path              general path            ratio
//	JSON,  500 hosts    1.5 ms,  7007 allocs     8.9 ms,  76358 allocs    5.9x
//	JSON, 2000 hosts    6.0 ms, 28007 allocs    41   ms, 305868 allocs    6.9x
//	YAML,  500 hosts    1.5 ms,  7007 allocs    27   ms, 187483 allocs     18x
//	YAML, 2000 hosts    8.6 ms, 28007 allocs   116   ms, 750017 allocs     13x
//
// With the fast path an apply of the same documents takes 2.8 ms (JSON and
// YAML) at 500 hosts and 13 ms at 2000 (snapshot's BenchmarkApplyData).
//
// A list of the fast path starts with room for one element and, when it
// holds more, grows once to the count of what is left (the count skims the
// text, and takes only elements that start as the element type starts):
// each list is allocated at its length. Lists started with room for four
// and were counted from their sixteenth element, so a host's one route
// took four; a fast decode of 500 hosts now allocates 1.0 MB instead of
// 2.1 MB (a second allocation for each list of two or more: 7007 allocs
// instead of 6511), and runs 11.30 M instructions (JSON) and 11.48 M
// (YAML) instead of 11.97 M and 12.43 M (callgrind).
//
// Counting a list is a skim of the text of all its elements, most of a
// document for its list of hosts, so it is read in tight loops: JSON
// strings by IndexByte and runs of spaces eight bytes at a time, YAML
// line by line. A YAML sequence entry's first key is read once (it was
// read to see that the entry is a mapping, then again), a list element's
// size is in the plan, and a short string that a document repeats (an
// address, an ID) is one string instead of an allocation each, from a
// small table in each decode's state (type interned). The table above
// predates these: a fast decode of the 500 hosts now runs 10.47 M
// instructions (JSON) and 10.15 M (YAML) instead of 11.56 M and 11.69 M,
// with 5104 allocations (980 kB) instead of 7007 (1005 kB).
//
// Both paths bound what the lists take decoded to 64 times the
// document's bytes plus 1 MiB (an element of a list is a struct of some
// hundred bytes that "{}," writes in three), and the general path stops at
// MaxProblems problems: a 16 MiB document of empty objects, or of zeros
// in a list of objects, asked for gigabytes before either (19 GB and a
// minute for 8 MB of zeros after sixteen upstreams), and is now refused
// (CodeSize at the list, CodeTooManyProblems) having allocated about the
// bound.
//
// # What the decoders rely on
//
// Only documented behaviour of the packages below: go.yaml.in/yaml/v2's
// Unmarshal into an interface value (maps of interface keys, lists,
// scalars resolved by YAML 1.1) and UnmarshalStrict, which differs from
// it there only by refusing repeated keys, each listed in a
// *yaml.TypeError; encoding/json's Decoder.Token, Valid and Unmarshal.
// The tests pin the YAML behaviour (TestYAMLBehaviour), so an upgrade
// that changes it fails them. sigs.k8s.io/yaml is a test dependency only:
// the reference the conversion is checked against.
//
// # Types
//
// A target type holds strings, booleans, signed integers, floating-point
// numbers, pointers, slices, maps with string keys and structs of these,
// named by their json tags. New refuses (panics for) anything else, such
// as interfaces, embedded structs and types that decode themselves: the
// decoders would have to read them as encoding/json does, which they do
// not yet.
//
// # Concurrency
//
// A Decoder is immutable and safe for concurrent use; each Decode
// allocates its own state.
package strictdecode
