package conf

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestACMEBlock(t *testing.T) {
	t.Parallel()
	const head = "tls {\n  acme {\n    accept_terms on\n"
	for _, tc := range []struct {
		desc  string
		body  string
		after string // main-file text after the tls block
		check func(*ACME) bool
		err   string
	}{
		{desc: "defaults", check: func(a *ACME) bool {
			return a.Directory == LetsEncryptURL && a.Storage == DefaultACMEStorage && a.KeyType == "ecdsa" &&
				slices.Equal(a.Challenges, []string{"http-01", "tls-alpn-01"})
		}},
		{desc: "everything", body: "directory https://127.0.0.1:14000/dir\nemail ops@example.com\nstorage /tmp/acme\nnames a.example.com B.example.com\nchallenges tls-alpn-01\nkey_type rsa\nrenew_before 720h\neab kid aGVsbG8\n",
			check: func(a *ACME) bool {
				return a.Directory == "https://127.0.0.1:14000/dir" && a.Email == "ops@example.com" && a.Storage == "/tmp/acme" &&
					slices.Equal(a.Names, []string{"a.example.com", "b.example.com"}) && slices.Equal(a.Challenges, []string{"tls-alpn-01"}) &&
					a.KeyType == "rsa" && a.RenewBefore == 720*time.Hour && a.EABKeyID == "kid"
			}},
		{desc: "staging shorthand", body: "directory letsencrypt-staging\n", check: func(a *ACME) bool { return a.Directory == LetsEncryptStagingURL }},
		{desc: "http directory", body: "directory http://ca.example/dir\n", err: "is not an https URL"},
		{desc: "wildcard name", body: "names *.example.com\n", err: "no wildcards"},
		{desc: "IP name", body: "names 10.0.0.1\n", err: "invalid name"},
		{desc: "name twice", body: "names a.example.com a.example.com\n", err: "listed twice"},
		{desc: "unknown challenge", body: "challenges dns-01\n", err: `unknown challenge type "dns-01"`},
		{desc: "bad email", body: "email ops\n", err: "not an email address"},
		{desc: "bad key type", body: "key_type ed25519\n", err: "unknown key type"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, head+tc.body+"  }\n}\n"+tc.after)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg.TLS.ACME) {
				t.Errorf("got %+v", *cfg.TLS.ACME)
			}
		})
	}
}

func TestACMETermsRequired(t *testing.T) {
	t.Parallel()
	_, err := loadString(t, "tls {\n  acme { names a.example.com }\n}\n")
	if err == nil || !strings.Contains(err.Error(), "accept_terms on") {
		t.Fatalf("err = %v, want the terms of service refused", err)
	}
}

// TestACMERouteNames: routes saying `acme on`, before or after the acme
// block, add their literal Host names; other routes do not.
func TestACMERouteNames(t *testing.T) {
	t.Parallel()
	route := func(name, rule, acme string) string {
		return "route " + name + " {\n  match " + rule + "\n  " + acme + "\n  respond 200\n}\n"
	}
	src := route("before", "Host(`b.example.com`) || Host(`c.example.com`)", "acme on") +
		"tls {\n  acme {\n    accept_terms on\n    names a.example.com\n  }\n}\n" +
		route("after", "Host(`d.example.com`) && !Host(`x.example.com`) || HostRegexp(`^e\\.example\\.com$`)", "acme on") +
		route("off", "Host(`f.example.com`)", "acme off") +
		route("none", "Host(`g.example.com`)", "priority 1")
	cfg, err := loadString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ACMENames()
	want := []string{"a.example.com", "b.example.com", "c.example.com", "d.example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("ACMENames = %v, want %v", got, want)
	}
}

func TestLiteralHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{"Host(`A.example.com`)", []string{"a.example.com"}},
		{`Host("a.example.com") && PathPrefix("/x")`, []string{"a.example.com"}},
		{"HostSNI(`a.example.com`) || HostSNI(`*`)", []string{"a.example.com"}},
		{"!Host(`a.example.com`)", nil},
		{"HostRegexp(`a.example.com`) || MyHost(`b.example.com`)", nil},
		{"Host(`*.example.com`) || Host(`127.0.0.1`) || Host(`localhost`)", nil},
		{"Host(`a.example.com`) || Host(`a.example.com`)", []string{"a.example.com"}},
		{"Host(", nil},
	} {
		if got := LiteralHosts(tc.rule); !slices.Equal(got, tc.want) {
			t.Errorf("LiteralHosts(%q) = %v, want %v", tc.rule, got, tc.want)
		}
	}
}

// FuzzLiteralHosts: any text gives valid, distinct, lower-case names that
// appear in the text.
func FuzzLiteralHosts(f *testing.F) {
	for _, s := range []string{"Host(`a.example.com`)", "HostSNI(\"b.c\") || !Host(`d.e`)", "Host(`", "HostHost(`x.y`)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		got := LiteralHosts(rule)
		for i, h := range got {
			if !validACMEName(h) || h != strings.ToLower(h) || slices.Contains(got[:i], h) ||
				!strings.Contains(strings.ToLower(rule), h) {
				t.Fatalf("LiteralHosts(%q) = %v: bad %q", rule, got, h)
			}
		}
	})
}
