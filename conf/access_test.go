package conf

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAccessDirectives: allow and deny take addresses, CIDRs and list
// files on a route and a listener; a bad entry is an error at its line in
// the list file as well as at the directive.
func TestAccessDirectives(t *testing.T) {
	t.Parallel()
	const list = "# scanners\n198.51.100.0/24\n\n203.0.113.7 # one host\n"
	src := "listen web {\n  addr :80\n  deny file lists/deny.txt 192.0.2.0/24\n}\nupstream u { server a:1 }\n" +
		"route r {\n  match Path(`/`)\n  allow 10.0.0.0/8 2001:db8::1\n  allow file lists/deny.txt\n  to u\n}\n"
	cfg, err := loadString(t, src, "lists/deny.txt", list)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.7/32"), netip.MustParsePrefix("192.0.2.0/24")}
	if got := cfg.Listeners[0].Deny; !slices.Equal(got, want) || len(cfg.Listeners[0].Allow) != 0 {
		t.Errorf("listener deny %v, want %v", got, want)
	}
	want = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128"), want[0], want[1]}
	if got := cfg.Routes[0].Allow; !slices.Equal(got, want) {
		t.Errorf("route allow %v, want %v", got, want)
	}
	if _, ok := cfg.PathOf("allow", "lists/deny.txt"); !ok {
		t.Error("the list file is not among the configuration's paths")
	}

	for _, c := range []struct {
		desc, line, list, want string
	}{
		{"bad inline entry", "deny 10.0.0.300", "", `main.conf:4:8: deny: invalid address "10.0.0.300"`},
		{"bad CIDR", "deny 10.0.0.0/40", "", `main.conf:4:8: deny: invalid CIDR "10.0.0.0/40"`},
		{"file without path", "deny file", "", `main.conf:4:8: deny: file needs a path`},
		{"missing file", "deny file nope.txt", "", `main.conf:4:13: deny: open nope.txt`},
		{"bad line in the file", "allow file l.txt", "10.0.0.0/8\n  10.0.0.x\n", `main.conf:4:14: allow: l.txt:2:3: invalid address "10.0.0.x"`},
	} {
		src := "listen web { addr :80 }\nupstream u { server a:1 }\nroute r {\n  " + c.line + "\n  match Path(`/`); to u\n}\n"
		var files []string
		if c.list != "" {
			files = []string{"l.txt", c.list}
		}
		_, err := loadString(t, src, files...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.desc, err, c.want)
		}
	}
}

// TestAccessFilesWatched: the list files of listen blocks and of routes
// in included files are watched like the configuration's own files.
func TestAccessFilesWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("edgeway.conf", "listen web {\n  addr :80\n  allow file office.txt 10.0.0.0/8\n}\ninclude \"routes/*.routes\"\n")
	write("routes/a.routes", "route r {\n  match Path(`/`)\n  deny 192.0.2.1 file lists/deny.txt\n  to u\n}\n")
	ws := Watched(filepath.Join(dir, "edgeway.conf"))
	for _, want := range []string{"office.txt", "lists/deny.txt"} {
		if !slices.Contains(ws.Files, filepath.Join(dir, want)) {
			t.Errorf("%s not watched: %v", want, ws.Files)
		}
	}
}

// TestErrorPageFile: a page file is read at load, its type from its
// extension, and watched.
func TestErrorPageFile(t *testing.T) {
	t.Parallel()
	src := "listen web {\n  addr :80\n  error_page 502 503 504 file errors/5xx.html\n  error_page 502 file errors/5xx.json\n}\n" +
		"upstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"
	cfg, err := loadString(t, src, "errors/5xx.html", "<h1>$status</h1>", "errors/5xx.json", `{"s":$status}`)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Listeners[0].ErrorPages
	if len(p) != 2 || p[0].ContentType != "text/html; charset=utf-8" || p[0].Body != "<h1>$status</h1>" || len(p[0].Codes) != 3 ||
		p[1].ContentType != "application/json" {
		t.Errorf("pages %+v", p)
	}
	if _, err := loadString(t, strings.Replace(src, "errors/5xx.json", "errors/missing.json", 1), "errors/5xx.html", "x"); err == nil ||
		!strings.Contains(err.Error(), "main.conf:4:23: error_page: open errors/missing.json") {
		t.Errorf("missing page file: %v", err)
	}
}

// TestBasicAuthFile: an htpasswd file's bcrypt users are read; another
// hash scheme is refused at its line.
func TestBasicAuthFile(t *testing.T) {
	t.Parallel()
	src := "listen web { addr :80 }\nupstream u { server a:1 }\nroute r {\n  match Path(`/`)\n  basic_auth users.htpasswd \"Ops area\"\n  to u\n}\n"
	cfg, err := loadString(t, src, "users.htpasswd", "# ops\nalice:$2y$05$abcdefghijklmnopqrstuv\n\nbob:$2b$05$abcdefghijklmnopqrstuv\n")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Routes[0].BasicAuth
	if a == nil || a.Realm != "Ops area" || len(a.Users) != 2 || a.Users["alice"] != "$2y$05$abcdefghijklmnopqrstuv" {
		t.Fatalf("basic auth %+v", a)
	}
	_, err = loadString(t, src, "users.htpasswd", "alice:$2y$05$x\ncarol:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n")
	if err == nil || !strings.Contains(err.Error(), `main.conf:5:14: basic_auth: users.htpasswd:2: user "carol": only bcrypt hashes are accepted`) ||
		strings.Contains(err.Error(), "W6ph5") {
		t.Errorf("a SHA1 hash: %v", err)
	}
}

// TestJWTBlock: the key set file is read and checked at load.
func TestJWTBlock(t *testing.T) {
	t.Parallel()
	src := "listen web { addr :80 }\nupstream u { server a:1 }\nroute r {\n  match Path(`/`)\n  jwt { jwks keys.json; issuer https://id.test; audience api; claim_header sub x-user }\n  to u\n}\n"
	const jwks = `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`
	cfg, err := loadString(t, src, "keys.json", jwks)
	if err != nil {
		t.Fatal(err)
	}
	j := cfg.Routes[0].JWT
	if j == nil || j.Issuer != "https://id.test" || j.Audience != "api" || j.ClaimHeaders[0] != [2]string{"sub", "X-User"} || string(j.JWKS) != jwks {
		t.Fatalf("jwt %+v", j)
	}
	if _, err := loadString(t, src, "keys.json", `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`); err == nil ||
		!strings.Contains(err.Error(), `main.conf:5:14: jwks: keys.json: key 0 (""): key type "oct"`) {
		t.Errorf("a shared-secret key: %v", err)
	}
	if _, err := loadString(t, strings.Replace(src, "jwks keys.json; ", "", 1)); err == nil || !strings.Contains(err.Error(), "jwt block has no jwks") {
		t.Errorf("no jwks: %v", err)
	}
}

// TestJWTBlockURL: a jwks URL is kept to be fetched (nothing read at
// load), with its refresh interval; a bad URL or a refresh for a file is
// refused at its line.
func TestJWTBlockURL(t *testing.T) {
	t.Parallel()
	const tmpl = "listen web { addr :80 }\nupstream u { server a:1 }\nroute r {\n  match Path(`/`)\n  jwt { %s }\n  to u\n}\n"
	for _, c := range []struct {
		desc, block, err string
		url              string
		refresh          time.Duration
	}{
		{desc: "https URL, default refresh", block: "jwks https://id.test/.well-known/jwks.json", url: "https://id.test/.well-known/jwks.json", refresh: DefaultJWKSRefresh},
		{desc: "http URL, refresh", block: "jwks http://127.0.0.1:9/keys; jwks_refresh 30s", url: "http://127.0.0.1:9/keys", refresh: 30 * time.Second},
		{desc: "URL without a host", block: "jwks https:///keys", err: `main.conf:5:14: jwks: invalid URL "https:///keys"`},
		{desc: "refresh of a file", block: "jwks keys.json; jwks_refresh 1m", err: "main.conf:5:25: jwks_refresh: only a jwks URL is refreshed"},
		{desc: "zero refresh", block: "jwks https://id.test/k; jwks_refresh 0s", err: "main.conf:5:46: jwks_refresh: must be more than 0"},
	} {
		cfg, err := loadString(t, fmt.Sprintf(tmpl, c.block), "keys.json", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.desc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.desc, err)
			continue
		}
		if j := cfg.Routes[0].JWT; j.JWKSURL != c.url || j.JWKSRefresh != c.refresh || j.JWKS != nil {
			t.Errorf("%s: url %q refresh %v, want %q %v", c.desc, j.JWKSURL, j.JWKSRefresh, c.url, c.refresh)
		}
	}
}
