package conf

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Cluster is the `cluster { ... }` block: several edgeway instances share
// their runtime state (upstream overrides, session ticket keys, members,
// ACME) through etcd. Config.Cluster is nil without the block, and then
// everything stays on local disk and in memory as before. The block is
// read at start only (a reload that changes it is applied on restart).
type Cluster struct {
	// Etcd lists the etcd client URLs, http:// or https://host:port. At
	// least one is required. http:// (no TLS) is refused unless every
	// endpoint is a loopback address (tests, a local member); the
	// schemes cannot be mixed.
	Etcd []string
	// Prefix is the key prefix every value is kept under, one per
	// cluster ("/edgeway/prod"): it starts with "/" and does not end
	// with one. Default "/edgeway".
	Prefix string
	// Name identifies this instance among the members. Default: the host
	// name. 1 to 63 letters, digits, '.', '_' or '-'.
	Name string
	// TLS holds the files for https:// endpoints: CA verifies the
	// servers (default: the system roots), Cert and Key are the client
	// certificate (mTLS; its CN is the etcd user). Nil without a tls
	// block.
	TLS *ClusterTLS
	// KeyFile holds the 32-byte key (raw, or 64 hex digits, or 44
	// base64 characters) that seals secrets (private keys, ticket keys)
	// before they go to etcd; the same file on every instance.
	// Required. A file readable by group or others is refused at start,
	// as is a key that does not open what the cluster sealed.
	KeyFile string
	// LeaseTTL is the lifetime of this instance's etcd lease (its member
	// record and locks): a dead instance's locks are free this long
	// after it died. 5s to 5m. Default 10s.
	LeaseTTL time.Duration
	Pos      Pos
}

// ClusterTLS is the cluster block's `tls { ca F; cert F; key F }`.
type ClusterTLS struct {
	CA, Cert, Key string
}

// Cluster defaults and limits.
const (
	DefaultClusterPrefix = "/edgeway"
	DefaultLeaseTTL      = 10 * time.Second
	MinLeaseTTL          = 5 * time.Second
	MaxLeaseTTL          = 5 * time.Minute
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)

func clusterDirective(b *builder, f *routes.File, d *routes.Directive) {
	c := &Cluster{Prefix: DefaultClusterPrefix, LeaseTTL: DefaultLeaseTTL, Pos: b.pos(d.Pos)}
	run(b, clusterTable, c, d.Block.Directives)
	if !hasDirective(d, "etcd") {
		b.missingf(d, "cluster block has no etcd (the etcd client URLs, such as https://10.0.0.1:2379)")
	}
	if !hasDirective(d, "key_file") {
		b.missingf(d, "cluster block has no key_file (32 random bytes, the same on every instance; "+
			"make one with: head -c 32 /dev/urandom > cluster.key && chmod 600 cluster.key)")
	}
	if c.Name == "" {
		h, err := os.Hostname()
		if err != nil || !clusterNameRE.MatchString(h) {
			b.missingf(d, "cluster block has no name and the host name %q cannot be one (set name NAME)", h)
		}
		c.Name = h
	}
	if t := findDirective(d, "tls"); t != nil && c.TLS != nil {
		b.clusterTLSChecks(c, t)
	}
	b.warnUnusedStorage(f)
	b.cfg.Cluster = c
}

// warnUnusedStorage warns at an acme block's storage line in the same
// file: beside a cluster block the ACME state lives in etcd and the folder
// is not read (`edgeway cluster import` moves it there once).
func (b *builder) warnUnusedStorage(f *routes.File) {
	if f == nil {
		return
	}
	for _, t := range f.Directives {
		if t.Name != "tls" || t.Block == nil {
			continue
		}
		if a := findDirective(t, "acme"); a != nil && a.Block != nil {
			if s := findDirective(a, "storage"); s != nil {
				b.warnf(s.Pos, "storage: not used beside a cluster block (the ACME state lives in etcd; "+
					"edgeway cluster import -c FILE DIR moves an existing folder there)")
			}
		}
	}
}

var clusterTable = table[*Cluster]{
	"etcd": clusterEndpoints,
	"prefix": func(b *builder, c *Cluster, d *routes.Directive) {
		p := d.Args[0].Value
		if !strings.HasPrefix(p, "/") || len(p) < 2 || strings.HasSuffix(p, "/") || len(p) > 200 ||
			strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) || strings.Contains(p, "//") {
			b.errorf(d.Args[0].Pos, "prefix: invalid prefix %q (expected /NAME[/NAME...], printable, no trailing /)", p)
			return
		}
		c.Prefix = p
	},
	"name": func(b *builder, c *Cluster, d *routes.Directive) {
		if v := d.Args[0].Value; !clusterNameRE.MatchString(v) {
			b.errorf(d.Args[0].Pos, "name: invalid name %q (expected 1 to 63 letters, digits, '.', '_' or '-')", v)
			return
		}
		c.Name = d.Args[0].Value
	},
	"key_file": func(b *builder, c *Cluster, d *routes.Directive) { c.KeyFile = b.filePath(d, 0, SecretFile) },
	"lease_ttl": func(b *builder, c *Cluster, d *routes.Directive) {
		v, ok := b.duration(d, true)
		if !ok {
			return
		}
		if v < MinLeaseTTL || v > MaxLeaseTTL || v%time.Second != 0 {
			b.errorf(d.Args[0].Pos, "lease_ttl: %s is out of range (expected whole seconds from %s to %s)", d.Args[0].Value, MinLeaseTTL, MaxLeaseTTL)
			return
		}
		c.LeaseTTL = v
	},
	"tls": func(b *builder, c *Cluster, d *routes.Directive) {
		c.TLS = &ClusterTLS{}
		run(b, clusterTLSTable, c.TLS, d.Block.Directives)
	},
}

var clusterTLSTable = table[*ClusterTLS]{
	"ca":   func(b *builder, t *ClusterTLS, d *routes.Directive) { t.CA = b.filePath(d, 0, ReadFile) },
	"cert": func(b *builder, t *ClusterTLS, d *routes.Directive) { t.Cert = b.filePath(d, 0, ReadFile) },
	"key":  func(b *builder, t *ClusterTLS, d *routes.Directive) { t.Key = b.filePath(d, 0, SecretFile) },
}

// clusterTLSChecks refuses half a client certificate and a tls block next
// to plaintext endpoints.
func (b *builder) clusterTLSChecks(c *Cluster, d *routes.Directive) {
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		b.errorf(d.Pos, "cluster tls: cert and key go together (the client certificate and its key)")
	}
	if len(c.Etcd) > 0 && strings.HasPrefix(c.Etcd[0], "http://") {
		b.errorf(d.Pos, "cluster tls: the etcd endpoints are http:// (use https:// to use TLS)")
	}
}

func clusterEndpoints(b *builder, c *Cluster, d *routes.Directive) {
	scheme := ""
	for _, a := range d.Args {
		u, err := etcdURL(a.Value)
		if err != nil {
			b.errorf(a.Pos, "etcd: %v", err)
			continue
		}
		if scheme != "" && u.Scheme != scheme {
			b.errorf(a.Pos, "etcd: %s mixes http:// and https:// endpoints (use one scheme)", a.Value)
			continue
		}
		scheme = u.Scheme
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			b.errorf(a.Pos, "etcd: %s is plaintext to a host that is not loopback; use https:// and a tls block "+
				"(cluster secrets and overrides would cross the network in clear)", a.Value)
			continue
		}
		c.Etcd = append(c.Etcd, u.Scheme+"://"+u.Host)
	}
}

// etcdURL checks one etcd client URL: http or https, a host and a port,
// nothing else.
func etcdURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("invalid URL %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("URL %q must start with https:// (or http:// to loopback)", s)
	case u.Hostname() == "" || u.Port() == "":
		return nil, fmt.Errorf("URL %q: expected scheme://host:port", s)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("URL %q: expected scheme://host:port (no user, path or query)", s)
	}
	if err := checkAddr(u.Host, false); err != nil {
		return nil, fmt.Errorf("URL %q: %w", s, err)
	}
	return u, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
