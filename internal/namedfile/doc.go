// Package namedfile reads the files a configuration names: the
// certificates, keys and client CA bundles of a document, the ACME cache,
// the reference daemon's config and token files. A name comes from
// whoever may write the configuration (an admin push, a draft to
// simulate), so reading it must not let the name decide how much memory,
// how many goroutines or how much time the read takes.
//
// # Rules
//
// [Reader.ReadAll] reads a set of files, each under these rules:
//
//   - The name's symlinks are resolved, and the target must be a regular
//     file: a directory, a device (/dev/zero, /dev/urandom), a FIFO or a
//     socket is refused from a stat, before anything opens it
//     ([CodeNotRegular]), so opening it has no side effect, no FIFO waits
//     for a writer and no socket is refused with ENXIO. The file is then
//     opened with O_NONBLOCK and O_NOCTTY, and fstat on the open
//     descriptor must say regular again, so a FIFO or device swapped in
//     between is refused too, without blocking.
//   - A file larger than the caller's cap is refused from its size
//     ([CodeTooLarge]), and the read stops one byte past the cap, so a
//     file that grows while read, or one whose size says nothing (a /proc
//     file), is refused after at most cap+1 bytes. The files of one
//     ReadAll together may not pass Reader.MaxTotal, so a document that
//     names thousands of different files cannot add up what no single cap
//     stops.
//   - The reads of one ReadAll run on at most four goroutines of its own,
//     which take the files in order, so one file that hangs holds up no
//     other; the caller waits at most Reader.Timeout for all of them.
//     What is not read by then is refused ([CodeTimeout]): the files
//     being read, and those no goroutine reached. A read cannot be
//     interrupted, so its goroutine is abandoned and ends when the kernel
//     returns. At most maxAbandoned such goroutines are tolerated in the
//     process; beyond that a ReadAll is refused at once ([CodeBusy])
//     rather than park more goroutines on a hung file system.
//
// Other failures (no such file, permission denied, an I/O error) are the
// file system's own errors, as os returns them: callers tell a missing
// file with errors.Is(err, fs.ErrNotExist) and report the rest as
// unreadable, under their own codes.
//
// # Limits and why
//
// [MaxPEMSize] (1 MiB) caps every PEM file a document names: a chain and
// its key are a few KiB (a chain of five certificates with 4096-bit RSA
// keys is under 12 KiB), and a CA bundle as large as Mozilla's, some 140
// roots, is about 220 KiB, so the cap is over four times the largest file
// met in practice. [DefaultMaxTotal] (64 MiB) holds 10,000 certificates of
// a 5 KiB chain and key with room to spare. [DefaultTimeout] (5 s) is
// thousands of times what a local disk takes, and short enough that a
// hung network file system refuses a publish in seconds rather than
// holding it.
//
// # Reuse
//
// ReadAll takes the results of an earlier read by name: a file whose stat
// (device, inode, size, modification time) equals the earlier result's
// [Stamp] is not read again, and its bytes are shared. That is what keeps
// a publish of an unchanged certificate set at one stat per file.
//
// # Tests
//
// No file on a test machine is slow, and a FIFO is refused before it
// could block, so [Intercept] replaces the opening of one name with a
// function: a test makes that file hang, grow or count its bytes, and
// every package of the module reads it through the same rules.
//
// # Concurrency
//
// A Reader is a small value, safe for concurrent use. The count of
// abandoned reads and the intercepts are the process's: the goroutines
// they bound are the process's too.
package namedfile
