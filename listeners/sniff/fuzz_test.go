package sniff

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that what it reports holds
// together: a result parses the same from exactly its bytes, one byte
// fewer is incomplete, an incomplete result needs more than it has, and
// names come out normalised.
func FuzzParse(f *testing.F) {
	for _, c := range realConfigs {
		raw := captureHello(f, c.cfg)
		f.Add(raw)
		f.Add(fragment(raw, 3, 50))
		f.Add(raw[:len(raw)/2])
	}
	f.Add(build(helloSpec{exts: []ext{sniExt("A.b."), alpnExt("h2", "x")}}))
	f.Add(build(helloSpec{noExts: true}))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		switch {
		case err == nil:
			if n <= 0 || n > len(b) {
				t.Fatalf("Parse took %d of %d bytes", n, len(b))
			}
			h2, n2, err2 := Parse(b[:n])
			if err2 != nil || n2 != n || h2.SNI != h.SNI || len(h2.ALPN) != len(h.ALPN) {
				t.Fatalf("Parse(its own %d bytes) = %+v, %d, %v; first %+v", n, h2, n2, err2, h)
			}
			if _, _, err := Parse(b[:n-1]); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("Parse(one byte short) error = %v, want ErrIncomplete", err)
			}
			if h.SNI != strings.ToLower(h.SNI) || strings.ContainsFunc(h.SNI, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
				t.Fatalf("SNI %q not normalised", h.SNI)
			}
			for _, p := range h.ALPN {
				if p == "" {
					t.Fatalf("empty ALPN protocol in %q", h.ALPN)
				}
			}
		case errors.Is(err, ErrIncomplete):
			if n <= len(b) || n > MaxHelloBytes {
				t.Fatalf("incomplete with %d bytes, needs %d", len(b), n)
			}
		default:
			if n != 0 {
				t.Fatalf("error %v with n = %d", err, n)
			}
			if err != ErrNotTLS && err != ErrTooLarge && !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}
