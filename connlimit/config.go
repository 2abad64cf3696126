package connlimit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/internal/problem"
)

const (
	// DefaultPerAddress is the cap used when Config.PerAddress is 0.
	DefaultPerAddress = 256
	// MaxPerAddress is the largest cap Config.PerAddress accepts.
	MaxPerAddress = 100_000
	// Off, as Config.PerAddress, turns the per-address cap off. Any negative
	// value does the same; Off is the one to write.
	Off = -1

	// DefaultTableSize is the number of table entries used when
	// Config.TableSize is 0: 65 536 entries of 8 bytes (512 KiB).
	DefaultTableSize = 1 << 16
	// MinTableSize and MaxTableSize bound Config.TableSize.
	MinTableSize = 8 // one probe window
	MaxTableSize = 1 << 24
)

// Validation codes. They are stable: tools match on them.
const (
	CodePerAddressInvalid = "connlimit.perAddress.invalid"
	CodeTableSizeInvalid  = "connlimit.tableSize.invalid"
	CodeDenyInvalid       = "connlimit.deny.invalid"
	CodeTrustedInvalid    = "connlimit.trustedProxies.invalid"
)

// Config configures a Limiter. The zero value is usable: a cap of
// DefaultPerAddress connections per address key, no deny list, no trusted
// proxies and a table of DefaultTableSize entries.
//
// A Config is read once by New; changing it afterwards has no effect on the
// Limiter built from it.
type Config struct {
	// PerAddress caps the concurrent connections of one address key (an
	// IPv4 address or an IPv6 /64). 0 means DefaultPerAddress; Off (or any
	// negative value) turns the cap off, so nothing is counted; at most
	// MaxPerAddress.
	PerAddress int

	// Deny lists prefixes whose connections are refused before anything
	// else, trusted proxies included. IPv4 prefixes also match the
	// IPv4-mapped IPv6 form of their addresses, IPv4-mapped prefixes of
	// /96 or longer match as the IPv4 prefixes they map (shorter ones are
	// refused), and IPv6 prefixes match no IPv4 address (::/0 is all of
	// IPv6), as in TrustedProxies.
	// Nil means no deny list.
	Deny []netip.Prefix

	// TrustedProxies lists the peers that are admitted without being
	// counted: load balancers and proxies whose connections carry many
	// visitors each. Their visitors are judged later by their real address
	// (by the request gate), not here. Nil means none.
	TrustedProxies []netip.Prefix

	// TableSize is the number of entries of the per-address table, a power
	// of two between MinTableSize and MaxTableSize. 0 means
	// DefaultTableSize. It bounds memory (8 bytes an entry) and the number
	// of addresses counted at once; addresses that find no room are let
	// through uncounted (see Stats.TableFull).
	TableSize int

	// Logger receives refusals at Info level, at most one record per
	// reason (deny list, cap, full table) every LogInterval, with the
	// number since the last record and the latest address. Nil means no
	// logging; the counters of Stats are kept either way.
	Logger *slog.Logger

	// DryRun makes the Limiter decide and keep nothing: Admit and Check
	// refuse a denied address and admit the rest, no connection takes a
	// place (a dry-run Limiter has no table, so the cap is never
	// reached), and neither the counters of Stats nor Logger see a
	// refusal; OnRefusal does. A simulator runs the connection stage so.
	// The zero value decides, counts and logs.
	DryRun bool

	// OnRefusal, when set, is called with each refusal, on the goroutine
	// that asked (the accept loop of a Listener, quic-go's for the QUIC
	// hooks), before the connection is closed; it must not block. A
	// connection admitted uncounted because the table was full is not a
	// refusal. Nil means none.
	OnRefusal func(Refusal)
}

// Refusal is one connection a Limiter refused, as Config.OnRefusal is
// told of it.
type Refusal struct {
	// Addr is the address judged; the invalid Addr for a client whose
	// address is unknown.
	Addr netip.Addr
	// Transport is where the connection came from.
	Transport Transport
	// Err is ErrDenied or ErrOverCap.
	Err error
}

// ValidationError reports one invalid field of a Config: a stable Code
// (one of the Code* constants), the field's Path ("deny[2]") and a
// message. It is the one problem type of the library's configs: errors.As
// finds it whichever package reported it.
type ValidationError = problem.Error

// Validate reports every problem of c at once, each as a *ValidationError,
// joined with errors.Join. It returns nil for a valid Config.
func (c Config) Validate() error {
	var errs []error
	add := func(code, path, format string, args ...any) {
		errs = append(errs, &ValidationError{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.PerAddress > MaxPerAddress {
		add(CodePerAddressInvalid, "perAddress", "%d exceeds the maximum of %d", c.PerAddress, MaxPerAddress)
	}
	if n := c.TableSize; n != 0 && (n < MinTableSize || n > MaxTableSize || n&(n-1) != 0) {
		add(CodeTableSizeInvalid, "tableSize", "%d is not a power of two between %d and %d", n, MinTableSize, MaxTableSize)
	}
	for i, p := range c.Deny {
		if err := ipaddr.CheckPrefix(p); err != nil {
			add(CodeDenyInvalid, fmt.Sprintf("deny[%d]", i), "%v", err)
		}
	}
	for i, p := range c.TrustedProxies {
		if err := ipaddr.CheckPrefix(p); err != nil {
			add(CodeTrustedInvalid, fmt.Sprintf("trustedProxies[%d]", i), "%v", err)
		}
	}
	return errors.Join(errs...)
}

// resolved is a Config with its defaults applied.
type resolved struct {
	perAddress uint64 // 0: cap off
	tableSize  int    // 0: no table (the cap off, or a dry run)
}

// resolve applies the defaults, on a copy, in one place.
func (c Config) resolve() resolved {
	r := resolved{tableSize: c.TableSize}
	switch {
	case c.PerAddress == 0:
		r.perAddress = DefaultPerAddress
	case c.PerAddress > 0:
		r.perAddress = uint64(c.PerAddress)
	}
	switch {
	case r.perAddress == 0 || c.DryRun:
		r.tableSize = 0
	case r.tableSize == 0:
		r.tableSize = DefaultTableSize
	}
	return r
}
