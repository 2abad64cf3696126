package tlsselect

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ticketLabel starts the HKDF info of every session ticket key, so the
// master secret's keys for tickets are apart from anything else derived
// from it.
const ticketLabel = "paduraksa tlsselect session ticket key v1\x00"

// TicketSecrets are master secrets of session ticket keys that may be
// replaced while Tables serve (Config.TicketSecrets): the current secret,
// whose keys seal and open tickets, and the previous one, whose keys only
// open them, so that a ticket sealed before a rotation of the master
// secret still resumes after it. A fleet that rotates its master secret
// installs each new pair with [TicketSecrets.Set]; every Table built with
// it installs the keys of the new pair on its next handshake, without a
// publish.
//
// Make one with [NewTicketSecrets]; the zero TicketSecrets holds no
// secret and a Config naming it is refused
// (tlsselect.ticketSecrets.empty). It is safe for concurrent use.
type TicketSecrets struct {
	set atomic.Pointer[secretSet]
}

// secretSet is one pair of master secrets, never modified once stored:
// its address tells a prebuilt config whether its keys are of it.
type secretSet struct {
	current, previous []byte
}

// NewTicketSecrets returns master secrets holding current and previous
// (nil when there is none), copied; each at least MinTicketSecretLen
// bytes.
func NewTicketSecrets(current, previous []byte) (*TicketSecrets, error) {
	s := new(TicketSecrets)
	if err := s.Set(current, previous); err != nil {
		return nil, err
	}
	return s, nil
}

// Set replaces the secrets with current and previous (nil when there is
// none), copied. A current secret shorter than MinTicketSecretLen, or a
// previous one neither nil nor that long, is refused with a
// *ValidationError (tlsselect.ticketSecret.short at "ticketSecret" or
// "previousTicketSecret") and changes nothing.
func (s *TicketSecrets) Set(current, previous []byte) error {
	if len(current) < MinTicketSecretLen {
		return &ValidationError{Code: CodeTicketSecretShort, Path: "ticketSecret",
			Msg: fmt.Sprintf("%d bytes; at least %d are needed", len(current), MinTicketSecretLen)}
	}
	if previous != nil && len(previous) < MinTicketSecretLen {
		return &ValidationError{Code: CodeTicketSecretShort, Path: "previousTicketSecret",
			Msg: fmt.Sprintf("%d bytes; at least %d are needed", len(previous), MinTicketSecretLen)}
	}
	set := &secretSet{current: append([]byte(nil), current...)}
	if previous != nil && string(previous) != string(current) {
		set.previous = append([]byte(nil), previous...)
	}
	s.set.Store(set)
	return nil
}

// ticketKeys derives session ticket keys for one prebuilt *tls.Config.
// Keys are a function of the master secret, the config's identity and the
// period number only, so every Table and every instance with the same
// secret derives the same key for the same config and period.
type ticketKeys struct {
	secrets *TicketSecrets
	period  int64 // nanoseconds
}

// epoch returns the number of the key period that t falls in.
func (k *ticketKeys) epoch(t time.Time) int64 {
	n := t.UnixNano()
	e := n / k.period
	if n < 0 && n%k.period != 0 {
		e--
	}
	return e
}

// key returns the key of config identity id for period e under the
// current master secret.
func (k *ticketKeys) key(id *[32]byte, e int64) [32]byte {
	return ticketKey(k.secrets.set.Load().current, id, e)
}

// ticketKey derives the key of config identity id for period e from a
// master secret.
func ticketKey(secret []byte, id *[32]byte, e int64) [32]byte {
	info := make([]byte, 0, len(ticketLabel)+len(id)+8)
	info = append(info, ticketLabel...)
	info = append(info, id[:]...)
	info = binary.BigEndian.AppendUint64(info, uint64(e))
	b, err := hkdf.Key(sha256.New, secret, nil, string(info), 32)
	if err != nil {
		// Only a key length past 255 hash lengths fails.
		panic("tlsselect: " + err.Error())
	}
	return [32]byte(b)
}

// prebuilt is one *tls.Config of a Table with the period and master
// secrets its session ticket keys are of. The config is never modified
// after the Table is built except through SetSessionTicketKeys, which
// crypto/tls makes safe on a config in use.
type prebuilt struct {
	config    *tls.Config
	id        [32]byte // identity: transport, certificate and policy
	keys      *ticketKeys
	installed atomic.Pointer[installedKeys] // what config holds
	mu        sync.Mutex                    // serialises rotations
}

// installedKeys says which keys a prebuilt config holds.
type installedKeys struct {
	set   *secretSet
	epoch int64
}

// rotate gives config the keys of the period now falls in under the
// current master secrets (sealing with the current secret's key of the
// period, opening with it, the one of the period before, and the previous
// secret's two) unless it has them. It is called on every handshake that
// selects the config; the check is two atomic loads.
func (p *prebuilt) rotate(now time.Time) {
	e := p.keys.epoch(now)
	if p.holds(e) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holds(e) {
		return
	}
	p.setKeys(e)
}

// holds reports whether config holds the keys of period e under the
// current master secrets.
func (p *prebuilt) holds(e int64) bool {
	in := p.installed.Load()
	return in.epoch == e && in.set == p.keys.secrets.set.Load()
}

// setKeys installs the keys of period e under the current master
// secrets.
func (p *prebuilt) setKeys(e int64) {
	set := p.keys.secrets.set.Load()
	keys := make([][32]byte, 0, 4)
	keys = append(keys, ticketKey(set.current, &p.id, e), ticketKey(set.current, &p.id, e-1))
	if set.previous != nil {
		keys = append(keys, ticketKey(set.previous, &p.id, e), ticketKey(set.previous, &p.id, e-1))
	}
	p.config.SetSessionTicketKeys(keys)
	p.installed.Store(&installedKeys{set: set, epoch: e})
}
