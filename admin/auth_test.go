package admin

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		content string
		mode    os.FileMode
		want    string
		errIs   error
		errText string
	}{
		{desc: "token with newline", content: "abc\n", mode: 0o600, want: "abc"},
		{desc: "owner read only", content: "  abc  ", mode: 0o400, want: "abc"},
		{desc: "readable by others", content: "abc", mode: 0o644, errIs: ErrInsecureTokenFile, errText: "chmod 600"},
		{desc: "readable by group", content: "abc", mode: 0o640, errIs: ErrInsecureTokenFile, errText: "mode 0640"},
		{desc: "writable by others", content: "abc", mode: 0o602, errIs: ErrInsecureTokenFile},
		{desc: "empty", content: "", mode: 0o600, errIs: ErrEmptyToken, errText: "head -c 32 /dev/urandom"},
		{desc: "white space only", content: " \n\t", mode: 0o600, errIs: ErrEmptyToken},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := ReadTokenFile(writeToken(t, tc.content, tc.mode))
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v; want one wrapping %v and saying %q", err, tc.errIs, tc.errText)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		_, err := ReadTokenFile(filepath.Join(t.TempDir(), "none"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("error %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.Chmod(dir, 0o700)
		if _, err := ReadTokenFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestNewRefusesBadTokenFile(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Listen: "127.0.0.1:0", TokenFile: writeToken(t, "abc", 0o644)})
	if !errors.Is(err, ErrInsecureTokenFile) {
		t.Fatalf("New with a 0644 token file: %v", err)
	}
	if _, err := New(Options{Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("New without a token file succeeded")
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, allOptions(&fakeState{}))
	for _, path := range []string{"/api/routes", "/api/config", "/api/explain?url=http://a/", "/api/nope", "/metrics"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			for _, bad := range []string{"", "wrong", testToken + "x", testToken[:4]} {
				r := call(t, http.MethodGet, base+path, bad)
				if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
					t.Fatalf("token %q: status %d (WWW-Authenticate %q), want 401", bad, r.status, r.header.Get("WWW-Authenticate"))
				}
				r.jsonError(t)
			}
			if r := call(t, http.MethodGet, base+path, testToken); r.status == http.StatusUnauthorized {
				t.Fatalf("right token refused: %s", r.body)
			}
		})
	}
	t.Run("other schemes", func(t *testing.T) {
		t.Parallel()
		for _, h := range []string{"Basic " + testToken, testToken, "Bearer", "bearer " + testToken} {
			req, _ := http.NewRequest(http.MethodGet, base+"/api/routes", nil)
			req.Header.Set("Authorization", h)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusUnauthorized
			if strings.HasPrefix(h, "bearer ") { // the scheme is case-insensitive (RFC 6750, RFC 9110 §11.1)
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("Authorization %q: status %d, want %d", h, resp.StatusCode, want)
			}
		}
	})
	t.Run("dot segments", func(t *testing.T) {
		t.Parallel()
		if r := call(t, http.MethodGet, base+"/x/../api/routes", ""); r.status == http.StatusOK {
			t.Fatalf("unclean path reached the API without a token: %s", r.body)
		}
	})
}

// TestTokenCompareIsConstantTime holds auth.go to comparing with
// crypto/subtle: a timing difference would let a client guess the token
// byte by byte.
func TestTokenCompareIsConstantTime(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "auth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var subtleCalls, plainCompares int
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "subtle" && n.Sel.Name == "ConstantTimeCompare" {
				subtleCalls++
			}
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "bytes" && n.Sel.Name == "Equal" {
				plainCompares++
			}
		}
		return true
	})
	if subtleCalls != 1 || plainCompares != 0 {
		t.Fatalf("auth.go: %d subtle.ConstantTimeCompare calls, %d bytes.Equal; want 1 and 0", subtleCalls, plainCompares)
	}
	tok := newToken([]byte(testToken))
	if !tok.matches(testToken) || tok.matches(testToken+"x") || tok.matches("") {
		t.Fatal("matches is wrong")
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:9900", true}, {"[::1]:9900", true}, {"localhost:9900", true}, {"127.1.2.3:1", true},
		{":9900", false}, {"0.0.0.0:9900", false}, {"10.0.0.1:9900", false}, {"[::]:9900", false}, {"bad", false},
	}
	for _, tc := range tests {
		if got := loopback(tc.addr); got != tc.want {
			t.Errorf("loopback(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
