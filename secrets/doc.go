// Package secrets keeps a gateway's long-lived secrets in a file, so that
// a restart, a binary upgrade or a second replica holds what clients
// hold: the affinity key that sticky-session cookies and headers are made
// with (snapshot.Compiler.AffinityKey, balance.NewAffinity) and the master
// secret TLS session ticket keys are derived from
// (snapshot.Compiler.TicketSecret, tlsselect.Config.TicketSecret).
//
//	keys, err := secrets.Open("/var/lib/paduraksa/secrets.json")
//	compiler := snapshot.Compiler{AffinityKey: keys.Affinity, TicketSecret: keys.Ticket}
//
// [Open] reads the file, or creates it with fresh random keys when it is
// absent: mode 0600, written to a temporary file in the same directory,
// synced, and linked into place only if no other process created the file
// meanwhile (then that one's keys are read), so two processes started at
// once agree. A file that is not a regular file, that its group or others
// may read or write, or that does not hold exactly the format below is
// refused with an [*Error] of a stable code (the Code* constants): a
// secret must never be replaced silently, since a new one moves every
// sticky client and breaks every ticket.
//
// # The format
//
//	{
//	  "version": 1,
//	  "affinityKey": "<base64 of 32 bytes>",
//	  "ticketSecret": "<base64 of 32 bytes>"
//	}
//
// Standard base64 with padding; no other field. [Parse] reads it,
// [Keys.Marshal] writes it, [New] makes fresh keys.
//
// # Ticket key rotation
//
// The file holds the ticket keys' master secret, not the keys: tlsselect
// derives the key of each period (tlsselect.Config.TicketKeyPeriod, the
// document's global.tls.ticketKeyPeriod, 24 h by default) from the secret
// and the period's number, installs the current period's key to seal and
// keeps the previous one to open (crypto/tls's SetSessionTicketKeys: the
// first key encrypts, all decrypt). The rotation is a function of the
// clock, so nothing needs writing back: a process started during a period
// derives the same current and previous keys as the one before it, and a
// ticket resumes across a restart as it does across a period's end. The
// cost is that the file is worth every period's keys: whoever reads it
// can open every ticket sealed with it (and with it the sessions'
// resumption secrets). Keep it 0600 on a disk only the gateway reads;
// to retire a secret, remove the file and restart (every ticket issued
// before then stops resuming, every affinity key moves).
//
// Without a secrets file a gateway draws both at random when it starts
// (the snapshot compiler's defaults), which is safe and loses sticky
// sessions and resumption at every restart.
//
// The package imports only the standard library and internal pieces. Its
// functions are safe for concurrent use; the file is read once, by Open.
package secrets
