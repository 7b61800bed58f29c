package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// loadString loads src as main.conf, next to the given route files.
func loadString(t *testing.T, src string, files ...string) (*Config, error) {
	t.Helper()
	fsys := fstest.MapFS{"main.conf": {Data: []byte(src)}}
	for i := 0; i+1 < len(files); i += 2 {
		fsys[files[i]] = &fstest.MapFile{Data: []byte(files[i+1])}
	}
	return LoadFS(fsys, "main.conf")
}

// diagnostics returns "file:line:col: msg" for each error in err.
func diagnostics(t *testing.T, err error) []string {
	t.Helper()
	var list *ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an *ErrorList", err, err)
	}
	var out []string
	for _, d := range *list {
		out = append(out, d.Pos.String()+": "+d.Msg)
	}
	return out
}

func TestErrorListFormat(t *testing.T) {
	t.Parallel()
	_, err := loadString(t, "listen web {\n\taddr :80\n\tbacklog -1\n}\nshutdown_grace soon\n")
	want := "main.conf:3:10: backlog: must be at least 0, got -1\n" +
		"    \tbacklog -1\n" +
		"    \t        ^\n" +
		"main.conf:5:16: shutdown_grace: invalid duration \"soon\" (expected a number and a unit, e.g. 10s, 250ms, 1m30s)\n" +
		"    shutdown_grace soon\n" +
		"                   ^"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

func TestThreeMistakesAllReported(t *testing.T) {
	t.Parallel()
	src := `listen web { addr :80 }
upstream api {
  server 10.0.0.1:99999
}
route a {
  match Host(` + "`a.example.com`" + `) && PathRegexp(` + "`^/(a`" + `)
  to api
}
route b {
  match Path(` + "`/b`" + `)
  to nowhere
}
`
	_, err := loadString(t, src)
	got := diagnostics(t, err)
	want := []string{
		`main.conf:3:10: server: invalid address "10.0.0.1:99999"`,
		`main.conf:6:45: invalid match rule: `,
		`main.conf:11:6: unknown upstream "nowhere"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestMissingMainFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.conf"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist inside", err)
	}
	var list *ErrorList
	if !errors.As(err, &list) || len(*list) != 1 {
		t.Errorf("err = %v, want a one-entry *ErrorList", err)
	}
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	cfg, err := Load(filepath.Join("..", "examples", "edgeway.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Files) != 3 || len(cfg.Listeners) != 4 || len(cfg.Routes) != 7 || len(cfg.Upstreams) != 3 {
		t.Errorf("files %d listeners %d routes %d upstreams %d", len(cfg.Files), len(cfg.Listeners), len(cfg.Routes), len(cfg.Upstreams))
	}
	for i, f := range cfg.Files {
		if !filepath.IsAbs(f) {
			t.Errorf("file %q is not absolute", f)
		}
		b, err := os.ReadFile(f)
		if sum := sha256.Sum256(b); err != nil || len(cfg.FileSHA256) != len(cfg.Files) || cfg.FileSHA256[i] != hex.EncodeToString(sum[:]) {
			t.Errorf("FileSHA256 of %s: %v (%v)", f, cfg.FileSHA256, err)
		}
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// TestVocabularyHasHandlers holds the routes vocabulary and the handler
// tables to the same names, so neither can gain a directive alone.
func TestVocabularyHasHandlers(t *testing.T) {
	t.Parallel()
	tables := map[routes.BlockKind][]string{
		routes.MainBlock: keys(topTable), routes.ListenBlock: keys(listenTable), routes.AdminBlock: keys(adminTable),
		routes.LogBlock: keys(logTable), routes.TracingBlock: keys(tracingTable), routes.RuntimeBlock: keys(runtimeTable), routes.UpstreamBlock: keys(upstreamTable), routes.RouteBlock: keys(routeTable),
		routes.TCPRouteBlock: keys(tcpRouteTable), routes.TLSBlock: keys(tlsTable), routes.ListenTLSBlock: keys(listenTLSTable),
		routes.H2Block: keys(h2Table), routes.UpstreamTLSBlock: keys(upstreamTLSTable),
	}
	for kind, handlers := range tables {
		var names []string
		for _, s := range routes.Vocabulary(kind) {
			names = append(names, s.Name)
		}
		if strings.Join(sorted(names), " ") != strings.Join(sorted(handlers), " ") {
			t.Errorf("%s: vocabulary %v, handlers %v", kind, sorted(names), sorted(handlers))
		}
	}
}

func keys[T any](tbl table[T]) []string {
	var out []string
	for k := range tbl {
		out = append(out, k)
	}
	return out
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := loadString(t, "listen web { addr :80 }\nadmin { token_file /t }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n")
	if err != nil {
		t.Fatal(err)
	}
	wantL := DefaultListener("web", ":80")
	wantL.Pos = Pos{File: "main.conf", Line: 1, Col: 1}
	if !reflect.DeepEqual(cfg.Listeners[0], wantL) {
		t.Errorf("listener = %+v\nwant       %+v", cfg.Listeners[0], wantL)
	}
	if cfg.Runtime != (Runtime{}) {
		t.Errorf("runtime = %+v, want every setting left alone", cfg.Runtime)
	}
	if cfg.Admin.Listen != "127.0.0.1:9900" || cfg.ShutdownGrace != 10*time.Second || cfg.ShutdownDelay != 0 {
		t.Errorf("admin %+v grace %v delay %v", cfg.Admin, cfg.ShutdownGrace, cfg.ShutdownDelay)
	}
	if got := (Log{Access: true, Format: "text", Output: "stderr", Level: "info", Sample: 1}); cfg.Log != got {
		t.Errorf("log = %+v", cfg.Log)
	}
	u := cfg.Upstreams[0]
	if u.ConnectTimeout != 5*time.Second || u.ResponseTimeout != time.Minute || u.IdleTimeout != 90*time.Second ||
		u.MaxIdleConns != 256 || u.Servers[0].Weight != 1 {
		t.Errorf("upstream = %+v", u)
	}
	if r := cfg.Routes[0]; r.Priority != len("Path(`/`)") || r.Rule == nil {
		t.Errorf("route priority %d (rule %v), want the rule's length", r.Priority, r.Rule)
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	cfg, err := loadString(t, "listen web { addr :80; trusted_proxies 10.1.2.3/8 ::1 }\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if !reflect.DeepEqual(cfg.Listeners[0].TrustedProxies, want) {
		t.Errorf("trusted = %v, want %v", cfg.Listeners[0].TrustedProxies, want)
	}
}

func TestOSInclude(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/main.conf", "listen web { addr :0 }\ninclude \"routes/*.routes\"\n")
	write("etc/routes/b.routes", "upstream u { server a:1 }\nroute b { match Path(`/b`); to u }\n")
	write("etc/routes/a.routes", "route a { match Path(`/a`); to u }\n")
	cfg, err := Load(filepath.Join(dir, "etc", "main.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Routes) != 2 || cfg.Routes[0].Name != "a" || cfg.Routes[1].Name != "b" {
		t.Errorf("routes = %+v", cfg.Routes)
	}
	want := []string{"etc/main.conf", "etc/routes/a.routes", "etc/routes/b.routes"}
	for i, w := range want {
		if cfg.Files[i] != filepath.Join(dir, w) {
			t.Errorf("Files[%d] = %q, want %q", i, cfg.Files[i], filepath.Join(dir, w))
		}
	}
}
