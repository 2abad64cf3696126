package snapshot

// Problem codes of [ValidationError] that only a compile can tell, beside
// the document's own (config.Codes, listed in config/codes.go) and those of
// the packages the document maps onto, which keep their codes at the
// document's paths. A file the document names (certificates[i].certFile,
// .keyFile, hosts[i].tls.clientCAs) that the file rules refuse carries
// tlsselect's file code at that path: file.notRegular (a directory,
// device, FIFO or socket, after symlinks), file.tooLarge (over
// tlsselect.MaxFileSize, or the document's files together over 64 MiB),
// file.timeout (not read within Compiler.FileTimeout), file.busy (refused
// at once: earlier reads hang in the kernel); see tlsselect/files.go.
//
// Codes are stable: tools and tests may branch on them. Paths use the
// document's JSON names; i and j stand for list indexes.
//
//	code                                  path                                        meaning
//	certificate.source.missing            certificates[i], certificates[i].acme       no files, no acme and no source of the gateway's own; acme without Compiler.ACME, or beside files
//	host.tls.clientCAs.unreadable         hosts[i].tls.clientCAs                      the client CA file is missing, cannot be read, or holds no PEM certificate (refused by the file rules: tlsselect's file.* codes)
//	upstream.http.tls.caFile.unreadable   upstreams[i].http.tls.caFile                the upstream CA file is missing or cannot be read (refused by the file rules: tlsselect's file.* codes)
//	upstream.http.version.plainText       upstreams[i].http.version                   "2" for http:// destinations only, without versionPolicy exact: they get HTTP/1.1 (a warning when https:// ones share the upstream)
//	publisher.zero                        ""                                          a revision of a zero Publisher, not made by NewPublisher
//	compile.internal                      any                                         a document the owners accepted and the compiler could not build: a bug
const (
	CodeCertificateSourceMissing     = "certificate.source.missing"
	CodeHostClientCAsUnreadable      = "host.tls.clientCAs.unreadable"
	CodeUpstreamHTTPVersionPlainText = "upstream.http.version.plainText"
	CodeUpstreamCAFileUnreadable     = "upstream.http.tls.caFile.unreadable"
	// CodePublisherZero refuses every revision of a zero Publisher.
	CodePublisherZero = "publisher.zero"

	// CodeCompileInternal reports a document that the owners accepted and
	// the compiler could not build: a bug, reported rather than served.
	CodeCompileInternal = "compile.internal"
)

// allCodes lists the compile's codes, in the order of the table above, but
// compile.internal, which no valid document reaches; the tests check that
// each one has a case.
var allCodes = [...]string{CodeCertificateSourceMissing, CodeHostClientCAsUnreadable, CodeUpstreamCAFileUnreadable, CodeUpstreamHTTPVersionPlainText}
