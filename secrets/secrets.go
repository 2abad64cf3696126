package secrets

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// KeyLen is the length in bytes of each key of the file: at least what
// balance.NewAffinity and tlsselect.MinTicketSecretLen ask.
const KeyLen = 32

// Version is the format version Marshal writes and Parse reads.
const Version = 1

// MaxFileBytes is the largest secrets file Open reads; the format needs
// under 200 bytes.
const MaxFileBytes = 64 << 10

// Error is one problem of a secrets file, with a stable Code (one of the
// Code* constants), a Path naming the field ("affinityKey"; empty for the
// file as a whole) and a Msg that names the file. It is the library's one
// problem type (problem.Error).
type Error = problem.Error

// Codes of [Error]. They are stable: tools and tests may branch on them.
//
//	code                        path          meaning
//	secrets.file.notRegular                   a directory, device, FIFO or socket
//	secrets.file.permissions                  group or others may read or write it
//	secrets.file.unreadable                   opening, reading or creating it failed
//	secrets.file.tooLarge                     past MaxFileBytes
//	secrets.malformed                         not one JSON object of the format's fields
//	secrets.version.unknown     version       not Version
//	secrets.affinityKey.invalid affinityKey   missing, not base64, or not KeyLen bytes
//	secrets.ticketSecret.invalid ticketSecret missing, not base64, or not KeyLen bytes
//	secrets.previousTicketSecret.invalid previousTicketSecret not base64, or not KeyLen bytes
//	secrets.rotated.invalid     rotated       not an RFC 3339 time
const (
	CodeNotRegular          = "secrets.file.notRegular"
	CodePermissions         = "secrets.file.permissions"
	CodeUnreadable          = "secrets.file.unreadable"
	CodeTooLarge            = "secrets.file.tooLarge"
	CodeMalformed           = "secrets.malformed"
	CodeVersionUnknown      = "secrets.version.unknown"
	CodeAffinityKeyInvalid  = "secrets.affinityKey.invalid"
	CodeTicketSecretInvalid = "secrets.ticketSecret.invalid"
	CodePreviousInvalid     = "secrets.previousTicketSecret.invalid"
	CodeRotatedInvalid      = "secrets.rotated.invalid"
)

// Keys are a gateway's long-lived secrets. The zero Keys hold none: pass
// them to the snapshot compiler and it draws both at random, as without a
// secrets file.
type Keys struct {
	// Affinity is the affinity key (snapshot.Compiler.AffinityKey), KeyLen
	// bytes.
	Affinity []byte
	// Ticket is the master secret of the TLS session ticket keys
	// (snapshot.Compiler.TicketSecret), KeyLen bytes.
	Ticket []byte
	// PreviousTicket is the master secret Ticket replaced at its last
	// rotation, KeyLen bytes, kept to open the tickets sealed before it
	// (tlsselect.TicketSecrets); nil when Ticket was never rotated.
	PreviousTicket []byte
	// Rotated is when Ticket was made: at the creation of the keys or at
	// their last rotation; zero when not known (a file written without
	// it).
	Rotated time.Time
}

// New returns fresh random keys, Rotated zero.
func New() Keys {
	k := Keys{Affinity: make([]byte, KeyLen), Ticket: make([]byte, KeyLen)}
	rand.Read(k.Affinity)
	rand.Read(k.Ticket)
	return k
}

// Rotate returns k with a fresh random ticket secret, the one it replaces
// as PreviousTicket and Rotated at now (in UTC, to the second). The
// affinity key stays: a new one would move every sticky client.
func (k Keys) Rotate(now time.Time) Keys {
	r := Keys{Affinity: k.Affinity, Ticket: make([]byte, KeyLen), PreviousTicket: k.Ticket, Rotated: now.UTC().Truncate(time.Second)}
	rand.Read(r.Ticket)
	return r
}

// file is the format on disk.
type file struct {
	Version      *int    `json:"version"`
	AffinityKey  *string `json:"affinityKey"`
	TicketSecret *string `json:"ticketSecret"`
	Previous     *string `json:"previousTicketSecret,omitempty"`
	Rotated      *string `json:"rotated,omitempty"`
}

// Marshal returns k in the file's format, ending with a newline; the
// optional fields only when k has them.
func (k Keys) Marshal() []byte {
	v := Version
	a, t := base64.StdEncoding.EncodeToString(k.Affinity), base64.StdEncoding.EncodeToString(k.Ticket)
	f := file{Version: &v, AffinityKey: &a, TicketSecret: &t}
	if k.PreviousTicket != nil {
		p := base64.StdEncoding.EncodeToString(k.PreviousTicket)
		f.Previous = &p
	}
	if !k.Rotated.IsZero() {
		r := k.Rotated.UTC().Format(time.RFC3339Nano)
		f.Rotated = &r
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	return append(b, '\n')
}

// Parse reads keys in the file's format. It returns every problem at
// once, each an [*Error], joined with errors.Join.
func Parse(data []byte) (Keys, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Keys{}, &Error{Code: CodeMalformed, Msg: "not the secrets format: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Keys{}, &Error{Code: CodeMalformed, Msg: "not the secrets format: data after the object"}
	}
	var p problem.List
	if f.Version == nil || *f.Version != Version {
		got := "missing"
		if f.Version != nil {
			got = fmt.Sprint(*f.Version)
		}
		p.Add(CodeVersionUnknown, "version", fmt.Sprintf("%s; this format is version %d", got, Version))
	}
	var k Keys
	k.Affinity = key(&p, f.AffinityKey, CodeAffinityKeyInvalid, "affinityKey")
	k.Ticket = key(&p, f.TicketSecret, CodeTicketSecretInvalid, "ticketSecret")
	if f.Previous != nil {
		k.PreviousTicket = key(&p, f.Previous, CodePreviousInvalid, "previousTicketSecret")
	}
	if f.Rotated != nil {
		t, err := time.Parse(time.RFC3339Nano, *f.Rotated)
		if err != nil {
			p.Add(CodeRotatedInvalid, "rotated", "not an RFC 3339 time")
		}
		k.Rotated = t.UTC()
	}
	if err := p.Err(); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// key decodes one key of the file.
func key(p *problem.List, s *string, code, path string) []byte {
	if s == nil {
		p.Add(code, path, "missing")
		return nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(*s)
	switch {
	case err != nil:
		p.Add(code, path, "not standard base64")
	case len(b) != KeyLen:
		p.Add(code, path, fmt.Sprintf("%d bytes; the key is %d", len(b), KeyLen))
	default:
		return b
	}
	return nil
}

// Open returns the keys of the secrets file at path, and creates the file
// with [New] keys when it does not exist (its directory must). A file that
// exists and is refused is left as it is: the error says why, with a Code.
// Problems of the content are each an [*Error] joined with errors.Join,
// their messages naming the file.
func Open(path string) (Keys, error) {
	k, err := read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := create(path, New()); err != nil && !errors.Is(err, fs.ErrExist) {
		return Keys{}, err
	}
	// Ours, or the one another process linked first.
	return read(path)
}

// read reads and checks an existing file. It refuses what is not a
// regular file before opening it, and opens without blocking, so a FIFO
// put there cannot hang it.
func read(path string) (Keys, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Keys{}, err
	}
	if err != nil {
		return Keys{}, fileError(CodeUnreadable, path, err.Error())
	}
	if err := checkMode(path, st); err != nil {
		return Keys{}, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Keys{}, fileError(CodeUnreadable, path, err.Error())
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return Keys{}, fileError(CodeUnreadable, path, err.Error())
	}
	if !os.SameFile(st, fst) {
		return Keys{}, fileError(CodeUnreadable, path, "replaced while opened")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Keys{}, fileError(CodeUnreadable, path, err.Error())
	}
	if len(data) > MaxFileBytes {
		return Keys{}, fileError(CodeTooLarge, path, fmt.Sprintf("more than %d bytes", MaxFileBytes))
	}
	k, err := Parse(data)
	if err != nil {
		var p problem.List
		for _, e := range problem.All(err) {
			p.Add(e.Code, e.Path, path+": "+e.Msg)
		}
		return Keys{}, p.Err()
	}
	return k, nil
}

// checkMode refuses what is not a regular file, or is open to the group
// or others.
func checkMode(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fileError(CodeNotRegular, path, fmt.Sprintf("not a regular file (%v)", st.Mode().Type()))
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fileError(CodePermissions, path, fmt.Sprintf("mode %04o lets the group or others in; chmod 600 it", perm))
	}
	return nil
}

func fileError(code, path, msg string) *Error {
	return &Error{Code: code, Msg: path + ": " + msg}
}

// create writes k to a new file at path, atomically: a temporary file of
// mode 0600 in the same directory, synced, then hard-linked to path,
// which fails with fs.ErrExist when path exists by then.
func create(path string, k Keys) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fileError(CodeUnreadable, path, "creating it: "+err.Error())
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes 0600 files; say it anyway against a changed umask
	// rule.
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(k.Marshal())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileError(CodeUnreadable, path, "creating it: "+err.Error())
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fileError(CodeUnreadable, path, "creating it: "+err.Error())
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
