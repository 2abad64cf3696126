// Package source is where a gateway's config documents come from: one
// small interface, [Source], through which documents reach the snapshot
// publisher, and the source of a config file, [File].
//
// # The interface
//
// A source loads the document it holds ([Source.Load]), hands every later
// one to a [Publish] and hears its outcome ([Source.Run]), and keeps the
// documents pushed to the gateway where it keeps its own
// ([Source.Save]). Documents travel as a [Document]: the bytes, why the
// source handed them over ([Reason]) and the source's own version of
// them, if it keeps versions. [To] is the Publish of a
// [snapshot.Publisher]; a wiring wraps it to do more before or after a
// publish. The package imports the snapshot package and the standard
// library only; a source that needs a heavy client lives in a package of
// its own beside it.
//
// # The file
//
//	f, err := source.NewFile(source.FileConfig{Path: "paduraksa.yaml", Logger: log})
//	doc, err := f.Load(ctx)                      // refuse to start without it
//	o, err := source.To(pub)(ctx, doc)           // o.Status: applied or refused
//	go f.Run(ctx, source.To(pub))                // changes, two agreeing reads
//	signal.Notify(hup, syscall.SIGHUP)           // and on SIGHUP:
//	f.Reload()
//	admin.Config{Persist: func(ctx context.Context, b []byte) error {
//		_, err := f.Save(ctx, source.Push{Data: b})
//		return err
//	}}
//
// A poll publishes a change once two reads at least a period apart agree,
// so a file caught half-written is never applied unless it stayed so for
// a whole period; a reload publishes what it reads. Every reload is
// logged with its outcome: applied, unchanged, superseded, or refused with
// every problem's code, path and message (unless FileConfig.RefusalsLogged
// leaves refusals to the publisher's own log); a file that cannot be read is
// logged once until that changes. An admin push is written to the file
// atomically (write, fsync, rename, directory fsync) and taken as
// published, so the polls that read it publish nothing.
//
// # etcd
//
// A fleet's instances read one document from etcd, at PREFIX/config. Its
// source, fleet.Etcd, lives in the nested module
// github.com/paduraksa/paduraksa/fleet, so that etcd's client reaches
// only the programs that import it, and fills the interface this way:
//
//   - Load gets PREFIX/config; the Document's Version is the key's mod
//     revision.
//   - Run watches the key from that revision on and publishes each new
//     value with its mod revision as Version; while etcd is unreachable
//     the last applied document keeps serving, and once it answers again
//     the key is read again and published if it moved on.
//   - Save is a transaction: put Data at PREFIX/config if the key's mod
//     revision is still IfVersion (ErrStale when it is not), returning
//     the new mod revision. Every instance, this one included, then
//     publishes the document from its watch. A push with If-Match thus
//     becomes a compare-and-swap on the key's revision for the whole
//     fleet, with the Version as the entity tag.
//
// # Concurrency
//
// A File is safe for concurrent use; Run runs on one goroutine at a time
// (its caller's), which it leaves when ctx is done, and starts none of
// its own. Save and Run share the file's state under one lock, never
// held across a publish.
package source
