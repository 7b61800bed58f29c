package conf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/edgeway/edgeway/routes"
)

// UpstreamTLS is an upstream's `tls { ... }` block: edgeway dials the
// pool's servers over TLS. The files are read at load (and on every
// reload, as they are watched), so a pool's tls.Config is built once per
// load, never per dial.
type UpstreamTLS struct {
	// CA is the file of the CAs that sign the servers' certificates
	// (`ca FILE`); "" (or `ca system`) uses the system's roots.
	CA string
	// CAPEM is CA's content, read at load; nil for the system's roots.
	CAPEM []byte
	// ServerName is the name sent as SNI and checked against the
	// servers' certificates (`server_name NAME`). Default "": each
	// server's host, as written in its `server` line.
	ServerName string
	// ClientCert and ClientKey are the certificate edgeway presents to
	// servers that ask for one (`client_cert CERT KEY`, mTLS); "" for
	// none. Their content is read at load into ClientCertPEM and
	// ClientKeyPEM.
	ClientCert, ClientKey       string
	ClientCertPEM, ClientKeyPEM []byte
	// MinVersion is the lowest TLS version offered (`min_version
	// 1.2|1.3`). Default tls.VersionTLS12.
	MinVersion uint16
	// InsecureSkipVerify (`verify off`) accepts any certificate; every
	// load that reads it logs a warning. Default false: chain and name
	// are verified.
	InsecureSkipVerify bool
	Pos                Pos
}

// ClientConfig builds the tls.Config of a pool's connections: roots,
// client certificate and version from t, ALPN for protocol ("h2" offers
// only h2: a server that does not pick it is refused; "h2+http1", the
// fallback, offers both; otherwise http/1.1), a session
// cache for resumption. ServerName is left for the dialer to set per
// server (Clone per server is done once, at transport build).
func (t *UpstreamTLS) ClientConfig(protocol string) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:         t.MinVersion,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // `verify off`, warned at every load
		ClientSessionCache: tls.NewLRUClientSessionCache(256),
		NextProtos:         []string{"http/1.1"},
	}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	switch protocol {
	case "h2":
		c.NextProtos = []string{"h2"}
	case "h2+http1":
		c.NextProtos = []string{"h2", "http/1.1"}
	}
	if t.CAPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(t.CAPEM) {
			return nil, fmt.Errorf("ca %s: %w", t.CA, errNoCerts)
		}
		c.RootCAs = pool
	}
	if t.ClientCertPEM != nil {
		kp, err := tls.X509KeyPair(t.ClientCertPEM, t.ClientKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("client_cert %s: %w", t.ClientCert, err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

var errNoCerts = errors.New("no PEM certificate in the file")

func upstreamTLSDirective(b *builder, u *Upstream, d *routes.Directive) {
	t := UpstreamTLS{MinVersion: tls.VersionTLS12, Pos: b.pos(d.Pos)}
	n := len(b.errs)
	run(b, upstreamTLSTable, &t, d.Block.Directives)
	if v := findDirective(d, "verify"); v != nil && t.InsecureSkipVerify {
		b.warnf(v.Pos, "verify off: upstream %q accepts any certificate its servers present", u.Name)
	}
	if _, err := t.ClientConfig("http1"); err != nil && len(b.errs) == n {
		b.errorf(d.Pos, "tls: %v", err)
	}
	u.TLS = &t
}

var upstreamTLSTable = table[*UpstreamTLS]{
	"ca": func(b *builder, t *UpstreamTLS, d *routes.Directive) {
		if d.Args[0].Value == "system" {
			return
		}
		t.CA = b.filePath(d, 0, ReadFile)
		t.CAPEM = b.readPEM(d, 0, t.CA)
	},
	"server_name": func(b *builder, t *UpstreamTLS, d *routes.Directive) {
		if !validHost(d.Args[0].Value) {
			b.errorf(d.Args[0].Pos, "server_name: invalid host %q", d.Args[0].Value)
			return
		}
		t.ServerName = d.Args[0].Value
	},
	"client_cert": func(b *builder, t *UpstreamTLS, d *routes.Directive) {
		t.ClientCert, t.ClientKey = b.filePath(d, 0, ReadFile), b.filePath(d, 1, ReadFile)
		t.ClientCertPEM = b.readPEM(d, 0, t.ClientCert)
		t.ClientKeyPEM = b.readPEM(d, 1, t.ClientKey)
	},
	"min_version": func(b *builder, t *UpstreamTLS, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "TLS version", []string{"1.2", "1.3"}); ok {
			t.MinVersion = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}[v]
		}
	},
	"verify": func(b *builder, t *UpstreamTLS, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "verify mode", []string{"on", "off"}); ok {
			t.InsecureSkipVerify = v == "off"
		}
	},
}

// readPEM reads the file at p (argument i of d) for an upstream's tls
// block; nil after an error, reported at the argument.
func (b *builder) readPEM(d *routes.Directive, i int, p string) []byte {
	if p == "" {
		return nil
	}
	data, err := b.fs.ReadFile(p)
	if err != nil {
		b.errorf(d.Args[i].Pos, "%s: %v", d.Name, err)
		return nil
	}
	return data
}
