package admin

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// ErrInsecureTokenFile is wrapped by ReadTokenFile's error when the token
// file may be read or written by group or others.
var ErrInsecureTokenFile = errors.New("token file is accessible by group or others")

// ErrEmptyToken is wrapped by ReadTokenFile's error when the token file
// holds nothing but white space.
var ErrEmptyToken = errors.New("token file is empty")

// maxTokenFile bounds what ReadTokenFile reads: a token is a line.
const maxTokenFile = 4 << 10

// CreateTokenFile writes a new random token (32 bytes, base64) to path
// when no file is there, mode 0600, creating its folder with mode 0700,
// and reports whether it did. An existing file is left as it is, for
// ReadTokenFile to check.
func CreateTokenFile(path string) (bool, error) {
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("admin token file: %w", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret) // never fails (crypto/rand)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("admin token file: %w", err)
	}
	_, err = fmt.Fprintln(f, base64.StdEncoding.EncodeToString(secret))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return false, fmt.Errorf("admin token file %s: %w", path, err)
	}
	return true, nil
}

// ReadTokenFile returns the token in path, with surrounding white space
// (a trailing newline) removed. It refuses a missing or empty file, one
// that is not a regular file, and one whose mode lets group or others in
// (mode & 0o077 != 0): the error says which chmod fixes it.
func ReadTokenFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("admin: no token_file configured")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat() // of the open file, so it cannot change between check and read
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("admin token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("admin token file %s has mode %04o: %w; run: chmod 600 %s", path, perm, ErrInsecureTokenFile, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return nil, fmt.Errorf("admin token file %s: %w", path, err)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("admin token file %s: %w; write a random token to it: "+
			"head -c 32 /dev/urandom | base64 > %s && chmod 600 %s", path, ErrEmptyToken, path, path)
	}
	return tok, nil
}

// bearerToken is the digest of the admin token: only digests are compared, so
// that the comparison takes the same time whatever the length or content
// of what a client sends.
type bearerToken [sha256.Size]byte

func newToken(secret []byte) bearerToken { return sha256.Sum256(secret) }

// matches reports, in constant time, whether got is the token.
func (t *bearerToken) matches(got string) bool {
	g := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(t[:], g[:]) == 1
}

// authorized reports whether r carries `Authorization: Bearer TOKEN` with
// the right token (RFC 6750 §2.1; the scheme is case-insensitive).
func (t *bearerToken) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return t.matches(strings.TrimSpace(cred))
}

// needsToken reports whether a path is guarded by the token: the API and
// the metrics. The probes (/healthz, /readyz) are open.
func needsToken(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/") || path == "/metrics"
}
