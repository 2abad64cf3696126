package tlsselect

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// ticketLabel starts the HKDF info of every session ticket key, so the
// master secret's keys for tickets are apart from anything else derived
// from it.
const ticketLabel = "paduraksa tlsselect session ticket key v1\x00"

// ticketKeys derives session ticket keys for one prebuilt *tls.Config.
// Keys are a function of the master secret, the config's identity and the
// period number only, so every Table and every instance with the same
// secret derives the same key for the same config and period.
type ticketKeys struct {
	secret []byte
	period int64 // nanoseconds
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

// key returns the key of config identity id for period e.
func (k *ticketKeys) key(id *[32]byte, e int64) [32]byte {
	info := make([]byte, 0, len(ticketLabel)+len(id)+8)
	info = append(info, ticketLabel...)
	info = append(info, id[:]...)
	info = binary.BigEndian.AppendUint64(info, uint64(e))
	b, err := hkdf.Key(sha256.New, k.secret, nil, string(info), 32)
	if err != nil {
		// Only a key length past 255 hash lengths fails.
		panic("tlsselect: " + err.Error())
	}
	return [32]byte(b)
}

// prebuilt is one *tls.Config of a Table with the period its session
// ticket keys are for. The config is never modified after the Table is
// built except through SetSessionTicketKeys, which crypto/tls makes safe
// on a config in use.
type prebuilt struct {
	config *tls.Config
	id     [32]byte // identity: transport, certificate and policy
	keys   *ticketKeys
	epoch  atomic.Int64 // period whose keys config holds
	mu     sync.Mutex   // serialises rotations
}

// rotate gives config the keys of the period now falls in (sealing with
// it, opening with it and the one before) unless it has them. It is called
// on every handshake that selects the config; the check is one atomic
// load.
func (p *prebuilt) rotate(now time.Time) {
	e := p.keys.epoch(now)
	if p.epoch.Load() == e {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epoch.Load() == e {
		return
	}
	p.setKeys(e)
}

func (p *prebuilt) setKeys(e int64) {
	p.config.SetSessionTicketKeys([][32]byte{p.keys.key(&p.id, e), p.keys.key(&p.id, e-1)})
	p.epoch.Store(e)
}
