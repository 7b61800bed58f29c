package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// The admin API's answers, pinned as golden files: testdata/admin/NAME.json
// is what the call NAME answers, with the values that change from run to
// run (times, hashes, the temporary folder, ports, the version, the
// reload's duration) replaced by placeholders. They are the shapes
// README's Admin API section documents. Rewrite them with
//
//	go test ./cmd/edgeway -run TestAdminGolden -update   (or UPDATE_GOLDEN=1)

var updateGolden = flag.Bool("update", false, "rewrite testdata/admin/*.json from what edgeway answers (also UPDATE_GOLDEN=1)")

// goldenMain and goldenRoutes are the configuration the golden files are
// answered from: two pools of unreachable servers (no health checks, so
// they stay healthy and no request goes to them), HTTP routes, a tcp
// route and a self-signed certificate.
const goldenMain = `
tls { self_signed admin.test localhost }
listen sec {
  addr 127.0.0.1:0
  protocols tls http1
}
`

func goldenRoutes(apiServers ...string) string {
	return `upstream api {
  balance hash header X-User
  slow_start 30s
  server ` + strings.Join(apiServers, "\n  server ") + `
}

upstream web {
  server 127.0.0.1:3
}

upstream db {
  server 127.0.0.1:5432
}

route api {
  match Host(` + "`api.test`" + `) && PathPrefix(` + "`/v1/`" + `)
  listeners web
  strip_prefix /v1
  to api
}

route health {
  match Path(` + "`/healthz`" + `)
  priority 1000
  respond 200 "ok\n"
}

route default {
  match PathPrefix(` + "`/`" + `)
  set_header X-Via edgeway
  to web
}

tcp route db {
  match HostSNI(` + "`db.test`" + `)
  listeners sec
  to db
}
`
}

// goldenCall is one admin API call and the status it must answer.
type goldenCall struct {
	name, method, path, body string
	status                   int
}

func TestAdminGolden(t *testing.T) {
	dir := t.TempDir()
	routes := filepath.Join(dir, "routes", "r.routes")
	e := startAdminIn(t, dir, "", goldenMain, map[string]string{"r.routes": goldenRoutes("127.0.0.1:1 weight 3", "127.0.0.1:2")})
	testutil.WaitFor(t, "/readyz 200", func() bool { return e.ready(t) == http.StatusOK })
	norm := e.normalizer(t)
	run := func(calls ...goldenCall) {
		t.Helper()
		for _, c := range calls {
			code, body := e.send(t, c.method, c.path, c.body, true)
			if code != c.status {
				t.Errorf("%s %s: status %d, want %d: %s", c.method, c.path, code, c.status, body)
			}
			checkGolden(t, c.name, norm(body))
		}
	}
	run(
		goldenCall{"routes", "GET", "/api/routes", "", 200},
		goldenCall{"config", "GET", "/api/config", "", 200},
		goldenCall{"explain-http", "GET", "/api/explain?method=GET&url=http://api.test/v1/users&header=X-User:%20ada&listener=web", "", 200},
		goldenCall{"explain-sni", "GET", "/api/explain?sni=db.test&alpn=postgresql", "", 200},
		goldenCall{"explain-no-route", "GET", "/api/explain?sni=admin.test", "", 404},
		goldenCall{"certificates", "GET", "/api/certificates", "", 200},
		goldenCall{"cluster-off", "GET", "/api/cluster", "", 200},
		goldenCall{"patch", "PATCH", "/api/upstreams/api/servers/127.0.0.1:1", `{"drain": true}`, 200},
		goldenCall{"patch-bad-drain", "PATCH", "/api/upstreams/api/servers/127.0.0.1:2", `{"drain": "yes"}`, 400},
		goldenCall{"patch-bad-weight", "PATCH", "/api/upstreams/api/servers/127.0.0.1:2", `{"weight": 2.5}`, 400},
		goldenCall{"patch-unknown-server", "PATCH", "/api/upstreams/api/servers/127.0.0.1:9", `{"drain": true}`, 404},
		goldenCall{"upstream", "GET", "/api/upstreams/api", "", 200},
		goldenCall{"upstreams", "GET", "/api/upstreams", "", 200},
		goldenCall{"reload", "POST", "/api/reload", "", 200},
	)
	// A reload (the file watcher's) that removes the drained server drops
	// its override: listed under dropped_overrides.
	replaceFile(t, routes, []byte(goldenRoutes("127.0.0.1:2")))
	testutil.WaitFor(t, "the dropped override listed", func() bool {
		var l struct {
			Dropped []json.RawMessage `json:"dropped_overrides"`
		}
		e.get(t, "/api/upstreams", &l)
		return len(l.Dropped) == 1
	})
	run(goldenCall{"upstreams-dropped", "GET", "/api/upstreams", "", 200})
	// A broken file: the watcher may refuse it first; the API's reload
	// is refused the same way, and is the last one.
	replaceFile(t, routes, []byte(strings.Replace(goldenRoutes("127.0.0.1:2"), "to web", "to wbe", 1)))
	run(
		goldenCall{"reload-refused", "POST", "/api/reload", "", 422},
		goldenCall{"config-after-reload", "GET", "/api/config", "", 200},
	)
}

var (
	rfc3339RE  = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)
	sha256RE   = regexp.MustCompile(`("sha256": )"[0-9a-f]{64}"`)
	hashRE     = regexp.MustCompile(`("hash": )"[0-9a-f]{16}"`)
	durationRE = regexp.MustCompile(`("duration_seconds": )[0-9.e-]+`)
	versionRE  = regexp.MustCompile(`("version": )"[^"]*"`)
	jsonKeyRE  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
)

// normalizer returns the function that replaces what changes from run to
// run in an answer of e with placeholders.
func (e *adminEdgeway) normalizer(t *testing.T) func(string) string {
	t.Helper()
	pairs := []string{e.dir, "$DIR"}
	for _, addr := range append(mapValues(e.p.Addrs(t, 2)), strings.TrimPrefix(e.admin, "http://")) {
		pairs = append(pairs, addr, "127.0.0.1:<port>")
	}
	paths := strings.NewReplacer(pairs...)
	return func(body string) string {
		body = paths.Replace(body)
		body = rfc3339RE.ReplaceAllString(body, `"<time>"`)
		body = sha256RE.ReplaceAllString(body, `$1"<sha256>"`)
		body = hashRE.ReplaceAllString(body, `$1"<hash>"`)
		body = durationRE.ReplaceAllString(body, `$1"<seconds>"`)
		return versionRE.ReplaceAllString(body, `$1"<version>"`)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// checkGolden compares got with testdata/admin/name.json, or rewrites the
// file under -update. Every answer must be a JSON object whose keys are
// all snake_case.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(got), &v); err != nil || v == nil {
		t.Errorf("%s: not a JSON object (%v):\n%s", name, err, got)
	}
	for _, k := range jsonKeys(v) {
		if !jsonKeyRE.MatchString(k) || strings.HasSuffix(k, "_ns") || strings.HasSuffix(k, "_ms") {
			t.Errorf("%s: key %q is not snake_case, or a duration not in seconds", name, k)
		}
	}
	file := filepath.Join("testdata", "admin", name+".json")
	if *updateGolden || os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s (run with -update to rewrite it):\ngot:\n%s\nwant:\n%s", name, file, got, want)
	}
}

// jsonKeys lists every object key in v, at any depth.
func jsonKeys(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out = append(append(out, k), jsonKeys(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, jsonKeys(x)...)
		}
	}
	return out
}
