package edgetls

import (
	"encoding/pem"
	"strings"
	"testing"
)

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// FuzzLookup checks SNI selection against its stated rules for any name.
func FuzzLookup(f *testing.F) {
	for _, seed := range []string{"", ".", "a.example.com", "A.EXAMPLE.COM.", "b.example.com",
		"x.b.example.com", "example.com", ".example.com", "first.test", "first.test..", "*.example.com",
		strings.Repeat("a", 253), strings.Repeat("a.", 127), "\x00.example.com", "é.example.com"} {
		f.Add(seed)
	}
	s, _ := selectionStore(f)
	ix := s.idx.Load()
	same := func(a, b []*certState) bool { return len(a) == len(b) && (len(a) == 0 || a[0] == b[0]) }
	f.Fuzz(func(t *testing.T, name string) {
		got := ix.lookup(name)
		if len(got) == 0 {
			t.Fatalf("lookup(%q) is empty", name)
		}
		if up := ix.lookup(asciiUpper(name)); !same(got, up) {
			t.Errorf("lookup(%q) differs from its uppercase", name)
		}
		if !strings.HasSuffix(name, ".") && len(name) < maxNameLen {
			if dot := ix.lookup(name + "."); !same(got, dot) {
				t.Errorf("lookup(%q) differs with a trailing dot", name)
			}
		}
		norm := asciiLower(strings.TrimSuffix(name, "."))
		switch {
		case same(got, ix.exact["a.example.com"]):
			if norm != "a.example.com" {
				t.Errorf("lookup(%q) gave a.example.com's certificates", name)
			}
		case same(got, ix.wild["example.com"]):
			label, rest, _ := strings.Cut(norm, ".")
			if label == "" || rest != "example.com" || norm == "a.example.com" {
				t.Errorf("lookup(%q) gave the wildcard", name)
			}
		case same(got, ix.exact["first.test"]):
			if norm != "first.test" {
				t.Errorf("lookup(%q) gave first.test's certificate", name)
			}
		}
	})
}

// FuzzParsePair checks that any certificate and key PEM either parse into
// a matching pair or fail with an error naming the file.
func FuzzParsePair(f *testing.F) {
	c := mustSelfSigned(f, "f.test")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	keyPEM := pkcs8PEMTB(f, c)
	f.Add(certPEM, keyPEM)
	f.Add(keyPEM, certPEM)
	f.Add([]byte("garbage"), keyPEM)
	f.Add(certPEM, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, certData, keyData []byte) {
		cert, err := parsePair("/c.pem", "/k.pem", certData, keyData)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "tls: cert /c.pem: ") && !strings.HasPrefix(msg, "tls: key /k.pem: ") {
				t.Errorf("error %q does not name the file", msg)
			}
			return
		}
		if len(cert.Certificate) == 0 || cert.Leaf == nil || !keyMatches(cert.Leaf, cert.PrivateKey) {
			t.Errorf("parsed a pair that does not hold together: %+v", cert)
		}
	})
}
