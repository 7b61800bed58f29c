package cluster

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func TestSealOpen(t *testing.T) {
	t.Parallel()
	s, err := newSealer(testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newSealer(testKey(2))
	plain := []byte("-----BEGIN EC PRIVATE KEY-----\nsecret\n")
	sealed, err := s.seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) || !bytes.HasPrefix(sealed, []byte(sealMagic)) {
		t.Fatalf("sealed value shows its plaintext or lacks the envelope: %q", sealed)
	}
	again, _ := s.seal(plain)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one value are equal (nonce reused)")
	}
	got, err := s.open(sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := other.open(sealed); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("open with another key: %v, want ErrKeyMismatch", err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x40
		if _, err := s.open(bad); err == nil {
			t.Fatalf("open accepted a value with byte %d changed", i)
		}
	}
	if _, err := s.open(sealed[:20]); err == nil {
		t.Fatal("open accepted a short value")
	}
}

func TestReadKeyFile(t *testing.T) {
	t.Parallel()
	raw := testKey(7)
	tests := []struct {
		desc string
		data []byte
		mode os.FileMode
		err  string
	}{
		{desc: "raw bytes", data: raw, mode: 0o600},
		{desc: "hex with newline", data: []byte(hex.EncodeToString(raw) + "\n"), mode: 0o400},
		{desc: "base64", data: []byte(base64.StdEncoding.EncodeToString(raw) + "\n"), mode: 0o600},
		{desc: "readable by group", data: raw, mode: 0o640, err: "accessible by group or others; chmod 600"},
		{desc: "readable by others", data: raw, mode: 0o604, err: "accessible by group or others"},
		{desc: "short", data: raw[:16], mode: 0o600, err: "holds 16 bytes; want 32 random bytes"},
		{desc: "empty", data: nil, mode: 0o600, err: "holds 0 bytes"},
		{desc: "long", data: append(raw, 'x', 'y'), mode: 0o600, err: "holds 34 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "cluster.key")
			if err := os.WriteFile(p, tc.data, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			key, err := ReadKeyFile(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !bytes.Equal(key, raw) {
				t.Fatalf("key = %x, %v", key, err)
			}
		})
	}
	if _, err := ReadKeyFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing key file was accepted")
	}
}

// FuzzOpen: Open never panics and accepts only what Seal made with the
// same key (a forged envelope never opens).
func FuzzOpen(f *testing.F) {
	s, _ := newSealer(testKey(3))
	good, _ := s.seal([]byte("ticket key"))
	f.Add(good)
	f.Add([]byte(sealMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, err := s.open(b)
		if err == nil && !bytes.Equal(b, good) && !bytes.Equal(plain, []byte("ticket key")) {
			t.Fatalf("forged value opened to %q", plain)
		}
	})
}

// FuzzParseKey: parseKey never panics and returns KeySize bytes or an
// error.
func FuzzParseKey(f *testing.F) {
	f.Add(testKey(1))
	f.Add([]byte(hex.EncodeToString(testKey(2))))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := parseKey(b)
		if err == nil && len(k) != KeySize {
			t.Fatalf("parseKey returned %d bytes", len(k))
		}
	})
}
