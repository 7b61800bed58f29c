package edgetls

import (
	"cmp"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
)

// ErrNoCertificate is returned by GetCertificate when the store holds no
// certificate at all (a default answers every other case).
var ErrNoCertificate = errors.New("tls: no certificate loaded")

// maxNameLen is the longest DNS name (RFC 1035); longer SNI matches
// nothing and gets the default.
const maxNameLen = 253

// index is an immutable snapshot of the store's certificates, built off to
// the side and published with one atomic store.
type index struct {
	exact map[string][]*certState // "a.example.com"
	wild  map[string][]*certState // "example.com" for "*.example.com"
	def   []*certState            // no SNI or no match
	// entries are all certificates, served or shadowed, for List;
	// active holds those served for at least one name or as the default.
	entries []*entry
	active  map[*entry]bool
}

// sourceRank breaks a tie between sources of equal gen (a file and a
// self-signed certificate of one Load): files win, self-signed lose.
func sourceRank(source string) int {
	switch source {
	case SourceFile:
		return 0
	case SourceSelfSigned:
		return 2
	}
	return 1
}

// newer reports whether a should be served before b for a name they share.
func newer(a, b *entry) bool {
	if a.gen != b.gen {
		return a.gen > b.gen
	}
	return sourceRank(a.source) < sourceRank(b.source)
}

// buildIndex indexes entries (file layer first, in configuration order,
// then put certificates oldest first). For each name only the source that
// changed it last is served; its certificates are ordered by key type.
func buildIndex(entries []*entry) *index {
	ix := &index{
		exact:   make(map[string][]*certState),
		wild:    make(map[string][]*certState),
		entries: entries,
		active:  make(map[*entry]bool),
	}
	byName := make(map[string][]*entry)
	for _, e := range entries {
		for _, n := range slices.Compact(slices.Sorted(slices.Values(e.names))) {
			byName[n] = append(byName[n], e)
		}
	}
	for name, es := range byName {
		sts := ix.candidates(es)
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			ix.wild[rest] = sts
		} else {
			ix.exact[name] = sts
		}
	}
	if d := defaultEntry(entries); d != nil {
		var sib []*entry
		for _, e := range entries {
			if e.source == d.source && e.nameKey == d.nameKey {
				sib = append(sib, e)
			}
		}
		ix.def = ix.candidates(sib)
	}
	return ix
}

// candidates keeps the entries of the newest source among es, marks them
// active, and returns their states in serving order: by key type, then
// newest first, then in list order.
func (ix *index) candidates(es []*entry) []*certState {
	best := es[0]
	for _, e := range es[1:] {
		if newer(e, best) {
			best = e
		}
	}
	var keep []*entry
	for _, e := range es {
		if e.source == best.source {
			keep = append(keep, e)
		}
	}
	slices.SortStableFunc(keep, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.algo, b.algo), cmp.Compare(b.gen, a.gen))
	})
	sts := make([]*certState, 0, len(keep))
	for _, e := range keep {
		ix.active[e] = true
		if !slices.Contains(sts, e.st) {
			sts = append(sts, e.st)
		}
	}
	return sts
}

// defaultEntry is the file certificate marked default, else the first
// entry (file certificates come first).
func defaultEntry(entries []*entry) *entry {
	for _, e := range entries {
		if e.isDefault {
			return e
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return entries[0]
}

// lookup returns the certificates for an SNI name: exact match, then a
// wildcard one label deep, then the default. It does not allocate: the
// name is normalised into a stack buffer and map lookups by string(bytes)
// do not copy.
func (ix *index) lookup(sni string) []*certState {
	if sni == "" || len(sni) > maxNameLen+1 {
		return ix.def
	}
	var buf [maxNameLen + 1]byte
	n := copy(buf[:], sni)
	if buf[n-1] == '.' {
		n--
	}
	name := buf[:n]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			name[i] = c + ('a' - 'A')
		}
	}
	if sts, ok := ix.exact[string(name)]; ok {
		return sts
	}
	// The wildcard covers exactly one non-empty leftmost label.
	if dot := indexByte(name, '.'); dot > 0 {
		if sts, ok := ix.wild[string(name[dot+1:])]; ok {
			return sts
		}
	}
	return ix.def
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// GetCertificate returns the certificate for a ClientHello, for
// tls.Config.GetCertificate. Selection: the certificates of the exact SNI
// name, else of the wildcard one label up, else the default; names compare
// case-insensitively and one trailing dot is ignored. Among several
// certificates for the name (RSA and ECDSA) the first the client supports
// wins, ECDSA first; when the client supports none the first is returned
// and the handshake fails on it. It returns ErrNoCertificate only when
// the store is empty. It never blocks: OCSP fetching happens elsewhere.
// A hello offering only acme-tls/1 gets the TLS-ALPN-01 challenge
// certificate of its name (SetChallenge), or ErrNoChallenge.
func (s *Store) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if isACMEHello(hello) {
		return s.challengeCertificate(hello)
	}
	ix := s.idx.Load()
	if ix == nil {
		return nil, ErrNoCertificate
	}
	sts := ix.lookup(hello.ServerName)
	switch len(sts) {
	case 0:
		return nil, ErrNoCertificate
	case 1:
		return sts[0].served.Load(), nil
	}
	return choose(hello, sts), nil
}

// choose returns the first certificate of sts the client supports. The
// name was matched already (and the default is served for names it does
// not cover), so the check runs without the server name.
func choose(hello *tls.ClientHelloInfo, sts []*certState) *tls.Certificate {
	h := *hello
	h.ServerName = ""
	for _, st := range sts {
		c := st.served.Load()
		if h.SupportsCertificate(c) == nil {
			return c
		}
	}
	return sts[0].served.Load()
}

// handshakeCertificate is GetCertificate for the configs ServerConfig
// builds: an empty store answers (nil, nil), so crypto/tls fails the
// handshake with an unrecognized_name alert and "tls: no certificates
// configured" rather than internal_error.
func (s *Store) handshakeCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c, err := s.GetCertificate(hello)
	if errors.Is(err, ErrNoCertificate) {
		return nil, nil
	}
	return c, err
}
