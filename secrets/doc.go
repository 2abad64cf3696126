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
// Standard base64 with padding. Two fields are optional, written by a
// fleet that rotates the ticket secret ([Keys.Rotate]; see below):
//
//	"previousTicketSecret": "<base64 of 32 bytes>",
//	"rotated": "2026-12-02T05:00:00Z"
//
// the secret the current one replaced, kept to open tickets sealed
// before the rotation, and when the current one was made (RFC 3339). No
// other field. [Parse] reads it, [Keys.Marshal] writes it, [New] makes
// fresh keys.
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
// # A fleet
//
// Instances behind one load balancer must share both keys: a sticky
// cookie made with one affinity key means nothing to an instance of
// another, and a ticket sealed by one instance resumes on another only
// if they derive the same keys. Package fleet (its module of its own)
// keeps these keys, in this format, in etcd at PREFIX+"secrets":
// created once by a transaction, so instances started at once agree and
// none overwrites another's; read by every instance at start; the ticket
// secret rotated by one instance elected among them ([Keys.Rotate]), the
// previous one kept, and installed by every instance without a restart
// (tlsselect.TicketSecrets). The affinity key is never rotated: a new
// one would move every sticky client at once. etcd then holds what this
// file would: whoever reads the key can open every ticket sealed with
// its secrets, so reach etcd over TLS, with authentication and a role
// that only the gateway's instances have on the prefix.
//
// Without a secrets file a gateway draws both at random when it starts
// (the snapshot compiler's defaults), which is safe and loses sticky
// sessions and resumption at every restart.
//
// The package imports only the standard library and internal pieces. Its
// functions are safe for concurrent use; the file is read once, by Open.
package secrets
