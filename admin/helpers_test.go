package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "s3cret-token"

// writeToken writes content to a token file with mode and returns its path.
func writeToken(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // not narrowed by the umask
		t.Fatal(err)
	}
	return p
}

// startServer starts an admin server on 127.0.0.1:0 with the test token
// and returns it and its base URL.
func startServer(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	opts.TokenFile = writeToken(t, testToken+"\n", 0o600)
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s, "http://" + s.Addr().String()
}

type reply struct {
	status int
	header http.Header
	body   string
}

// call sends method url with the token (none when token is ""), as curl
// would.
func call(t *testing.T, method, url, token string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// jsonError decodes {"error": ...}, failing the test when the body is not
// that or the content type is not JSON.
func (r reply) jsonError(t *testing.T) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q, want application/json (body %q)", ct, r.body)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error == "" {
		t.Fatalf("body %q is not {\"error\": ...}: %v", r.body, err)
	}
	return e.Error
}

// decode unmarshals the body into v.
func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// fakeState implements every interface the server reads.
type fakeState struct {
	routes  []Route
	status  ConfigStatus
	explain func(ExplainQuery) (Explanation, error)
	reload  func(context.Context, ReloadOptions) (ReloadResult, error)
}

func (f *fakeState) Routes() []Route            { return f.routes }
func (f *fakeState) ConfigStatus() ConfigStatus { return f.status }
func (f *fakeState) Explain(q ExplainQuery) (Explanation, error) {
	if f.explain == nil {
		return Explanation{}, ErrNoRoute
	}
	return f.explain(q)
}

func (f *fakeState) Reload(ctx context.Context, opts ReloadOptions) (ReloadResult, error) {
	if f.reload == nil {
		return ReloadResult{OK: true}, nil
	}
	return f.reload(ctx, opts)
}

// Interface guards.
var (
	_ Reloader    = (*fakeState)(nil)
	_ RouteLister = (*fakeState)(nil)
	_ Explainer   = (*fakeState)(nil)
	_ ConfigInfo  = (*fakeState)(nil)
)

func allOptions(f *fakeState) Options {
	return Options{Reloader: f, Routes: f, Explain: f, Config: f}
}
