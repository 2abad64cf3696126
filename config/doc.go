// Package config is the gateway's config document: the [Document] (plain
// Go types with JSON field names), its strict decoding from JSON or YAML
// ([Decode]), its canonical form ([Canonical], [CanonicalForm]) and the
// checks that are the document's own ([Check]). Package snapshot maps a
// Document onto the configs of the packages that own each setting,
// compiles it and serves it; this package knows nothing of serving.
//
// # What the document owns
//
// Every setting belongs to the package whose behaviour it changes:
// balance, health, proxy, gate, tlsselect. That package validates it,
// applies its defaults and exports the built-in names the document uses
// verbatim. The document owns only what no package below it can tell: its
// syntax, the values only it spells ([ParseDuration], [ParseAddress],
// [ParsePrefix], [ParsePin]), IDs, names listed twice, references between
// objects (a route's upstream, a host's policies) and which blocks go
// together. Those checks are here, with the codes of codes.go; [Check]
// runs them over a whole document, and a [Checker] part by part, for a
// compiler that checks again only what changed. snapshot.Validate runs
// them and the owners' checks together.
//
// Rules shared with other packages are the library's one rule, in
// internal/: a host name is spelled as internal/hostname spells it (the
// gate and the TLS selector store the same key), a prefix read as
// internal/ipaddr reads it (the reference daemon's flags too), a
// destination's address as internal/hostport reads it (upstream.NewCluster
// and upstream.ClusterConfig.Validate too).
//
// # Decoding
//
// [Decode] refuses unknown fields, values of the wrong type and fields
// given twice, each with its path, and returns what did decode beside the
// problems, so that one refusal lists every problem of a document. The
// decoders are internal/strictdecode's, generic over the target type: a
// fast one-pass reader for the forms configs are written in and a general
// path for everything else, with the same result; that package's
// documentation says why there are two and what each costs.
//
// # Canonical form
//
// Two documents that mean the same config have the same canonical bytes:
// defaults left out and values in one spelling. Every default is the
// owner's own, and so is one that depends on other settings (a health
// threshold the metadata sets, a reactivation period that is the window:
// health.Config.Resolve says what they are). A publisher compares them
// to tell an unchanged document, and the byte ranges of [Form] to reuse
// what an unchanged host or upstream compiled to. It makes each form
// since the applied one ([CanonicalFormSince]): a host or upstream equal,
// field by field, to the copy that form kept of it is not encoded again.
//
// # Compatibility
//
// Fields are only ever added to the document; the zero value of each new
// field keeps the behaviour stored documents had.
//
// # Concurrency
//
// Decode, Canonical, CanonicalForm, CanonicalFormSince, Check and the
// Parse functions are safe for concurrent use and never modify a
// document. A Checker is used by
// one goroutine.
package config
