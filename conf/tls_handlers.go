package conf

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Handlers of the top-level tls block and of a listener's tls block. conf
// checks syntax only: certificate files are read by the tls store at load
// time, so that a reload reports a missing or bad file the same way.

// DefaultTLSStore returns a TLSStore with every documented default filled
// in and no certificates, as an empty `tls { }` block produces.
func DefaultTLSStore() TLSStore {
	return TLSStore{OCSPStapling: true, SessionTickets: true, TicketRotation: 12 * time.Hour}
}

// DefaultListenerTLS returns the settings of a TLS listener without a tls
// block: TLS 1.2 and up, crypto/tls's suites and curves, no client
// certificates, a 10s handshake timeout.
func DefaultListenerTLS() ListenerTLS {
	return ListenerTLS{MinVersion: tls.VersionTLS12, HandshakeTimeout: 10 * time.Second}
}

// minTicketRotation is the shortest ticket_rotation accepted: a key made
// more often than this makes resumption rarely work.
const minTicketRotation = time.Minute

func tlsDirective(b *builder, _ *routes.File, d *routes.Directive) {
	s := DefaultTLSStore()
	s.Pos = b.pos(d.Pos)
	run(b, tlsTable, &s, d.Block.Directives)
	b.cfg.TLS = &s
}

var tlsTable = table[*TLSStore]{
	"cert":            certDirective,
	"self_signed":     selfSigned,
	"ocsp_stapling":   func(b *builder, s *TLSStore, d *routes.Directive) { b.setSwitch(d, &s.OCSPStapling) },
	"session_tickets": func(b *builder, s *TLSStore, d *routes.Directive) { b.setSwitch(d, &s.SessionTickets) },
	"ticket_rotation": ticketRotation,
	"acme":            acmeDirective,
}

// certDirective reads `cert CERTFILE KEYFILE [default]`.
func certDirective(b *builder, s *TLSStore, d *routes.Directive) {
	c := Certificate{Pos: b.pos(d.Pos)}
	ok := true
	for i, dst := range []*string{&c.CertFile, &c.KeyFile} {
		if *dst = b.filePath(d, i, ReadFile); *dst == "" {
			ok = false
		}
	}
	for _, other := range s.Certificates {
		if ok && other.CertFile == c.CertFile {
			b.errorf(d.Args[0].Pos, "cert: %s is listed twice (first at line %d)", d.Args[0].Value, other.Pos.Line)
			ok = false
		}
	}
	if len(d.Args) == 3 {
		c.Default = true
		for _, other := range s.Certificates {
			if other.Default {
				b.errorf(d.Args[2].Pos, "cert: only one certificate can be the default (line %d already is)", other.Pos.Line)
				ok = false
			}
		}
	}
	if ok {
		s.Certificates = append(s.Certificates, c)
	}
}

// confPath resolves a path written in the main file against the main
// file's directory.

// selfSigned reads `self_signed NAME...`: host names, *.wildcards or IP
// addresses, kept in lower case.
func selfSigned(b *builder, s *TLSStore, d *routes.Directive) {
	b.certNames(d, "self_signed", validCertName,
		"a host name such as example.com, a wildcard such as *.example.com, or an IP address", &s.SelfSigned)
}

// certNames appends the names of d to dst in lower case; a name that valid
// refuses (expected says what it accepts) or that is listed twice is an
// error at its position.
func (b *builder) certNames(d *routes.Directive, directive string, valid func(string) bool, expected string, dst *[]string) {
	for _, a := range d.Args {
		name := strings.ToLower(a.Value)
		switch {
		case !valid(name):
			b.errorf(a.Pos, "%s: invalid name %q (expected %s)", directive, a.Value, expected)
		case containsString(*dst, name):
			b.errorf(a.Pos, "%s: %q is listed twice", directive, a.Value)
		default:
			*dst = append(*dst, strings.Clone(name))
		}
	}
}

// validCertName accepts what a certificate can name: a host, a wildcard
// for one label, an IP address.
func validCertName(name string) bool {
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		return validHost(rest) && !isIP(rest) && !strings.HasSuffix(rest, ".")
	}
	return validHost(name) && !strings.HasSuffix(name, ".")
}

func ticketRotation(b *builder, s *TLSStore, d *routes.Directive) {
	v, ok := b.duration(d, false)
	switch {
	case !ok:
	case v < minTicketRotation:
		b.errorf(d.Args[0].Pos, "%s: %s is out of range (expected at least %v)", d.Name, d.Args[0].Value, minTicketRotation)
	default:
		s.TicketRotation = v
	}
}

// ownStore is the listener's own certificates, made on their first line.
func (t *ListenerTLS) ownStore() *TLSStore {
	if t.Certificates == nil {
		s := DefaultTLSStore()
		s.Pos = t.Pos
		t.Certificates = &s
	}
	return t.Certificates
}

// listenTLS reads a listener's `tls { ... }` block; the listener checks
// afterwards that its protocols include tls.
func listenTLS(b *builder, l *Listener, d *routes.Directive) {
	t := DefaultListenerTLS()
	t.Pos = b.pos(d.Pos)
	run(b, listenTLSTable, &t, d.Block.Directives)
	if a := findDirective(d, "client_auth"); a != nil && t.ClientCA == "" {
		b.errorf(a.Pos, "client_auth: needs client_ca, the CAs that sign client certificates")
	}
	if t.ClientCA != "" && t.ClientAuth == "" {
		t.ClientAuth = "require"
	}
	if c := findDirective(d, "ciphers"); c != nil && t.MinVersion == tls.VersionTLS13 {
		b.warnf(c.Pos, "ciphers: no effect with min_version 1.3 (TLS 1.3 suites are not configurable)")
	}
	l.TLS = &t
}

var listenTLSTable = table[*ListenerTLS]{
	"min_version": func(b *builder, t *ListenerTLS, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "TLS version", []string{"1.2", "1.3"}); ok {
			t.MinVersion = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[v]
		}
	},
	"ciphers": ciphers,
	"curves":  curves,
	"client_ca": func(b *builder, t *ListenerTLS, d *routes.Directive) {
		if p := b.filePath(d, 0, ReadFile); p != "" {
			t.ClientCA = p
		}
	},
	"cert":        func(b *builder, t *ListenerTLS, d *routes.Directive) { certDirective(b, t.ownStore(), d) },
	"self_signed": func(b *builder, t *ListenerTLS, d *routes.Directive) { selfSigned(b, t.ownStore(), d) },
	"client_auth": func(b *builder, t *ListenerTLS, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "client_auth mode", []string{"require", "optional"}); ok {
			t.ClientAuth = v
		}
	},
	"handshake_timeout": func(b *builder, t *ListenerTLS, d *routes.Directive) { b.setDuration(d, &t.HandshakeTimeout) },
}

// ciphers reads TLS 1.2 suite names, as crypto/tls spells them. Suites
// crypto/tls calls insecure are refused by name, and so are the TLS 1.3
// suites, which crypto/tls always offers and does not let anyone choose.
func ciphers(b *builder, t *ListenerTLS, d *routes.Directive) {
	for _, a := range d.Args {
		id, err := cipherByName(a.Value)
		switch {
		case err != "":
			b.errorf(a.Pos, "ciphers: %s", err)
		case containsUint16(t.CipherSuites, id):
			b.errorf(a.Pos, "ciphers: %s is listed twice", a.Value)
		default:
			t.CipherSuites = append(t.CipherSuites, id)
		}
	}
}

func cipherByName(name string) (uint16, string) {
	for _, s := range tls.InsecureCipherSuites() {
		if s.Name == name {
			return 0, name + " is insecure and not allowed"
		}
	}
	var names []string
	for _, s := range tls.CipherSuites() {
		tls13 := len(s.SupportedVersions) == 1 && s.SupportedVersions[0] == tls.VersionTLS13
		switch {
		case s.Name == name && tls13:
			return 0, name + " is a TLS 1.3 suite; TLS 1.3 suites are always on and not configurable"
		case s.Name == name:
			return s.ID, ""
		case !tls13:
			names = append(names, s.Name)
		}
	}
	return 0, fmt.Sprintf("unknown cipher suite %q (expected %s)", name, strings.Join(names, ", "))
}

// curveIDs maps the names `curves` accepts to crypto/tls CurveIDs.
var curveIDs = map[string]tls.CurveID{
	"X25519MLKEM768": tls.X25519MLKEM768,
	"X25519":         tls.X25519,
	"P-256":          tls.CurveP256, "secp256r1": tls.CurveP256,
	"P-384": tls.CurveP384, "secp384r1": tls.CurveP384,
	"P-521": tls.CurveP521, "secp521r1": tls.CurveP521,
}

func curves(b *builder, t *ListenerTLS, d *routes.Directive) {
	for _, a := range d.Args {
		id, ok := curveIDs[a.Value]
		switch {
		case !ok:
			b.errorf(a.Pos, "curves: unknown curve %q (expected X25519MLKEM768, X25519, P-256, P-384, P-521)", a.Value)
		case containsUint16(t.Curves, uint16(id)):
			b.errorf(a.Pos, "curves: %s is listed twice", a.Value)
		default:
			t.Curves = append(t.Curves, uint16(id))
		}
	}
}

func containsUint16(list []uint16, v uint16) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}
