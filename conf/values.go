package conf

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edgeway/edgeway/internal/ipset"
	"github.com/edgeway/edgeway/internal/jwt"
	"github.com/edgeway/edgeway/routes"
)

// The value helpers read a directive's first argument, report a problem at
// its position (naming the directive) and return ok=false on error.

func (b *builder) duration(d *routes.Directive, positive bool) (time.Duration, bool) {
	a := d.Args[0]
	v, err := routes.ParseDuration(a.Value)
	if err != nil {
		b.errorf(a.Pos, "%s: %v", d.Name, err)
		return 0, false
	}
	if positive && v == 0 {
		b.errorf(a.Pos, "%s: must be more than 0", d.Name)
		return 0, false
	}
	return v, true
}

func (b *builder) setDuration(d *routes.Directive, dst *time.Duration) {
	if v, ok := b.duration(d, true); ok {
		*dst = v
	}
}

// setInt reads a whole number of at least lo into dst.
func (b *builder) setInt(d *routes.Directive, lo int, dst *int) {
	a := d.Args[0]
	v, err := routes.ParseInt(a.Value)
	switch {
	case err != nil:
		b.errorf(a.Pos, "%s: %v", d.Name, err)
	case v < lo:
		b.errorf(a.Pos, "%s: must be at least %d, got %d", d.Name, lo, v)
	default:
		*dst = v
	}
}

// setIntRange reads a whole number from lo to hi into dst; the word
// `off`, when zeroWord is "off", or `auto` likewise, reads as 0.
func (b *builder) setIntRange(d *routes.Directive, lo, hi int, zeroWord string, dst *int) {
	a := d.Args[0]
	if zeroWord != "" && a.Value == zeroWord {
		*dst = 0
		return
	}
	v, err := routes.ParseInt(a.Value)
	switch {
	case err != nil && zeroWord != "":
		b.errorf(a.Pos, "%s: invalid value %q (expected a whole number or %s)", d.Name, a.Value, zeroWord)
	case err != nil:
		b.errorf(a.Pos, "%s: %v", d.Name, err)
	case v < lo || v > hi:
		b.errorf(a.Pos, "%s: %d is out of range (expected %d to %d)", d.Name, v, lo, hi)
	default:
		*dst = v
	}
}

// setSizeRange reads a byte count from lo to hi into dst.
func (b *builder) setSizeRange(d *routes.Directive, lo, hi int64, dst *int64) {
	a := d.Args[0]
	v, err := routes.ParseSize(a.Value)
	switch {
	case err != nil:
		b.errorf(a.Pos, "%s: %v", d.Name, err)
	case v < lo && hi == math.MaxInt64:
		b.errorf(a.Pos, "%s: %s is out of range (expected at least %s)", d.Name, a.Value, sizeText(lo))
	case v < lo || v > hi:
		b.errorf(a.Pos, "%s: %s is out of range (expected %s to %s)", d.Name, a.Value, sizeText(lo), sizeText(hi))
	default:
		*dst = v
	}
}

// sizeText writes a limit for a message: 64MiB, 1KiB, 0.
func sizeText(n int64) string {
	for _, u := range []struct {
		unit string
		mult int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}

// setSeconds reads a duration of whole seconds, at most hi, into dst; 0
// is allowed, and so is the word `off` (as 0) when off is set.
func (b *builder) setSeconds(d *routes.Directive, hi time.Duration, off bool, dst *time.Duration) {
	a := d.Args[0]
	if off && a.Value == "off" {
		*dst = 0
		return
	}
	v, ok := b.duration(d, false)
	switch {
	case !ok:
	case v%time.Second != 0:
		b.errorf(a.Pos, "%s: %s is not a whole number of seconds", d.Name, a.Value)
	case v > hi:
		b.errorf(a.Pos, "%s: %s is out of range (expected at most %v)", d.Name, a.Value, hi)
	default:
		*dst = v
	}
}

func (b *builder) setSwitch(d *routes.Directive, dst *bool) {
	a := d.Args[0]
	v, err := routes.ParseSwitch(a.Value)
	if err != nil {
		b.errorf(a.Pos, "%s: %v", d.Name, err)
		return
	}
	*dst = v
}

// oneOf reads a value from a closed set.
func (b *builder) oneOf(a routes.Arg, what string, set []string) (string, bool) {
	for _, s := range set {
		if a.Value == s {
			return s, true
		}
	}
	b.errorf(a.Pos, "unknown %s %q (expected %s)", what, a.Value, strings.Join(set, ", "))
	return "", false
}

// name reads the name of a block (listener, upstream, route) and declares
// it in its namespace. Names appear in logs, metrics and the admin API.
func (b *builder) name(d *routes.Directive, ns string) string {
	a := d.Args[0]
	if !validName(a.Value) {
		b.errorf(a.Pos, "invalid %s name %q (use letters, digits, '_', '-' and '.')", ns, a.Value)
		return a.Value
	}
	b.declare(ns, a.Value, a.Pos)
	return a.Value
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// checkAddr validates host:port. A listen address may leave the host out
// (every address) and use port 0 (any free port, for tests); a server
// address needs a host and a port from 1 to 65535.
func checkAddr(s string, listen bool) error {
	host, port, err := net.SplitHostPort(s)
	lo := 1
	if listen {
		lo = 0
	}
	n, perr := strconv.Atoi(port)
	switch {
	case err != nil || perr != nil || n < lo || n > 65535 || port[0] == '+':
		return fmt.Errorf("invalid address %q (expected host:port with a port from %d to 65535)", s, lo)
	case host == "" && !listen:
		return fmt.Errorf("invalid address %q (expected a host before the port)", s)
	case host != "" && !validHost(host):
		return fmt.Errorf("invalid host %q in address %q (expected an IP address or a host name)", host, s)
	}
	return nil
}

func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z') {
				return false
			}
		}
	}
	return true
}

// parsePrefix reads a CIDR or a single IP address (a /32 or /128).
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if ip, err := netip.ParseAddr(s); err == nil && ip.Zone() == "" {
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("invalid trusted proxy %q (expected an IP address or a CIDR such as 10.0.0.0/8)", s)
}

// setShare reads a percentage with decimals, `0%` to `100%` (`0.5%`),
// as a share from 0 to 1.
func (b *builder) setShare(d *routes.Directive, dst *float64) {
	a := d.Args[0]
	num, ok := strings.CutSuffix(a.Value, "%")
	v, err := strconv.ParseFloat(num, 64)
	switch {
	case !ok || err != nil || math.IsNaN(v):
		b.errorf(a.Pos, "%s: invalid percentage %q (expected a number with %%, such as 10%% or 0.5%%)", d.Name, a.Value)
	case v < 0 || v > 100:
		b.errorf(a.Pos, "%s: %s is out of range (expected 0%% to 100%%)", d.Name, a.Value)
	default:
		*dst = v / 100
	}
}

// addressList reads `allow`/`deny` arguments into dst: addresses, CIDRs
// and `file PATH`, a list file of one address or CIDR per line (#
// comments), read now: a bad entry is an error at its file:line:col, and
// the file is watched like the configuration's own.
func (b *builder) addressList(d *routes.Directive, dst *[]netip.Prefix) {
	for i := 0; i < len(d.Args); i++ {
		a := d.Args[i]
		if a.Value != "file" {
			p, err := ipset.ParsePrefix(a.Value)
			if err != nil {
				b.errorf(a.Pos, "%s: %v", d.Name, err)
				continue
			}
			*dst = append(*dst, p)
			continue
		}
		if i+1 == len(d.Args) {
			b.errorf(a.Pos, "%s: file needs a path", d.Name)
			return
		}
		i++
		path := b.filePath(d, i, ReadFile)
		if path == "" {
			continue
		}
		data, err := b.fs.ReadFile(path)
		if err != nil {
			b.errorf(d.Args[i].Pos, "%s: %v", d.Name, err)
			continue
		}
		ps, err := ipset.ParseList(data)
		var le *ipset.LineError
		switch {
		case errors.As(err, &le):
			b.errorf(d.Args[i].Pos, "%s: %s:%d:%d: %v", d.Name, path, le.Line, le.Col, le.Err)
		case err != nil:
			b.errorf(d.Args[i].Pos, "%s: %s: %v", d.Name, path, err)
		default:
			*dst = append(*dst, ps...)
		}
	}
}

// errorPage reads `error_page CODE... file PATH` (the file read now, its
// content type from its extension) or `error_page CODE... BODY`.
func (b *builder) errorPage(d *routes.Directive, dst *[]ErrorPage) {
	p := ErrorPage{ContentType: "text/plain; charset=utf-8", Pos: b.pos(d.Pos)}
	i := 0
	for ; i < len(d.Args)-1; i++ {
		a := d.Args[i]
		if a.Value == "file" {
			break
		}
		c, err := routes.ParseInt(a.Value)
		if err != nil || c < 400 || c > 599 {
			b.errorf(a.Pos, "error_page: invalid status code %s (expected an error status from 400 to 599)", a)
			return
		}
		p.Codes = append(p.Codes, c)
	}
	if len(p.Codes) == 0 {
		b.errorf(d.Args[0].Pos, "error_page: expected status codes before the page, such as `error_page 502 503 file errors/5xx.html`")
		return
	}
	rest := d.Args[i:]
	if c, err := routes.ParseInt(rest[0].Value); err == nil && c >= 400 && c <= 599 && len(rest) == 1 {
		b.errorf(rest[0].Pos, "error_page: expected `file PATH` or a body after the status codes")
		return
	}
	switch {
	case rest[0].Value == "file" && len(rest) == 2:
		path := b.filePath(d, i+1, ReadFile)
		if path == "" {
			return
		}
		data, err := b.fs.ReadFile(path)
		if err != nil {
			b.errorf(rest[1].Pos, "error_page: %v", err)
			return
		}
		p.Body = string(data)
		switch strings.ToLower(filepath.Ext(path)) {
		case ".html", ".htm":
			p.ContentType = "text/html; charset=utf-8"
		case ".json":
			p.ContentType = "application/json"
		}
	case rest[0].Value != "file" && len(rest) == 1:
		p.Body = rest[0].Value
	default:
		b.errorf(rest[0].Pos, "error_page: expected `file PATH` or one body after the status codes")
		return
	}
	*dst = append(*dst, p)
}

// basicAuth reads `basic_auth HTPASSWD [REALM]`: the file's users, whose
// hashes must be bcrypt ($2a$, $2b$, $2y$: `htpasswd -B`).
func (b *builder) basicAuth(d *routes.Directive) *BasicAuth {
	a := &BasicAuth{Realm: "edgeway", Users: map[string]string{}, Pos: b.pos(d.Pos)}
	if len(d.Args) == 2 {
		a.Realm = d.Args[1].Value
		if a.Realm == "" || strings.ContainsAny(a.Realm, "\"\\\r\n") {
			b.errorf(d.Args[1].Pos, "basic_auth: invalid realm %q (no quotes, backslashes or line breaks)", a.Realm)
		}
	}
	path := b.filePath(d, 0, SecretFile)
	if path == "" {
		return a
	}
	data, err := b.fs.ReadFile(path)
	if err != nil {
		b.errorf(d.Args[0].Pos, "basic_auth: %v", err)
		return a
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		switch {
		case !ok || user == "":
			b.errorf(d.Args[0].Pos, "basic_auth: %s:%d: expected user:hash", path, n+1)
		case !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") && !strings.HasPrefix(hash, "$2y$"):
			b.errorf(d.Args[0].Pos, "basic_auth: %s:%d: user %q: only bcrypt hashes are accepted (make one with htpasswd -B)", path, n+1, user)
		default:
			a.Users[user] = hash
		}
	}
	return a
}

// isHTTPURL reports whether v is written as an http or https URL (not a
// file path).
func isHTTPURL(v string) bool {
	l := strings.ToLower(v)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// serviceURL checks the URL of a service edgeway asks (forward_auth, a
// jwks URL): http or https with a host.
func serviceURL(v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid URL %q (expected http://host[:port]/path or https://...)", v)
	}
	return nil
}

// ValidJWKS reports whether data is a JWKS edgeway can verify with.
func ValidJWKS(data []byte) error {
	_, err := jwt.ParseKeySet(data)
	return err
}
