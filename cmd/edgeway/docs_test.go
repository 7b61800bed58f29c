package main

import (
	cryptotls "crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/syscheck"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestExamplesLoad loads every configuration under examples/, so that the
// shipped examples cannot go stale.
func TestExamplesLoad(t *testing.T) {
	mains, _ := filepath.Glob(filepath.Join(testutil.ModuleRoot(t), "examples", "*.conf"))
	if len(mains) == 0 {
		t.Fatal("no examples found")
	}
	for _, m := range mains {
		t.Run(filepath.Base(m), func(t *testing.T) {
			cfg, err := conf.Load(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("example has warnings: %v", cfg.Warnings)
			}
		})
	}
}

var snippetRE = regexp.MustCompile("(?s)```(edgeway|routes)\n(.*?)```")

// TestReadmeSnippetsLoad loads every configuration block of README.md:
// ```edgeway blocks as main files, ```routes blocks as route files included
// by a minimal main file.
func TestReadmeSnippetsLoad(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := snippetRE.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d configuration blocks in README.md, want at least 2", len(blocks))
	}
	for i, b := range blocks {
		t.Run(fmt.Sprintf("%d-%s", i, b[1]), func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"edgeway.conf": b[2]}
			if b[1] == "routes" {
				files = map[string]string{
					"edgeway.conf":   "listen web { addr 127.0.0.1:0 }\ninclude \"snippet.routes\"\n",
					"snippet.routes": b[2],
				}
			}
			testutil.WriteFiles(t, dir, files)
			if _, err := conf.Load(filepath.Join(dir, "edgeway.conf")); err != nil {
				t.Fatalf("README block %d does not load:\n%v", i, err)
			}
		})
	}
}

// startExample starts the shipped example as `make run` does, with its
// ports moved to free ones, and returns it with its web (8080) and
// websecure (8443) ports.
func startExample(t *testing.T) (p *testutil.Proc, web, sec string) {
	t.Helper()
	web, demo := fmt.Sprint(testutil.FreePort(t)), fmt.Sprint(testutil.FreePort(t))
	sec, demoTLS := fmt.Sprint(testutil.FreePort(t)), fmt.Sprint(testutil.FreePort(t))
	admin := fmt.Sprint(testutil.FreePort(t))
	ports := strings.NewReplacer(":8080", ":"+web, ":8081", ":"+demo, ":8443", ":"+sec, ":8444", ":"+demoTLS, ":9900", ":"+admin)
	dir := copyExamples(t, func(_, s string) string { return ports.Replace(s) })
	p = testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	p.Addrs(t, 4)
	return p, web, sec
}

// copyExamples copies examples/ to a new directory, each file's text
// passed through edit with its slash-separated path there, and returns
// the directory.
func copyExamples(t *testing.T, edit func(rel, text string) string) string {
	t.Helper()
	src := filepath.Join(testutil.ModuleRoot(t), "examples")
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case d.IsDir() && rel == "state": // what a `make run` wrote: its token, its overrides
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		testutil.WriteFiles(t, dir, map[string]string{rel: edit(filepath.ToSlash(rel), string(b))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestValidateShadowedRoute is issue 17's case: a route added to the
// shipped example with a rule shorter than the catch-all's. Validate
// warns about it when the catch-all has its default priority, and exits
// 0; with the example's `priority 1` it has nothing to say.
func TestValidateShadowedRoute(t *testing.T) {
	hello := "\nroute hello {\n  match Path(`/hello`)\n  respond 200 \"hello\\n\"\n}\n"
	tests := []struct {
		desc     string
		priority string // what replaces the catch-all's priority line
		want     string // the warning, or "" for none
	}{
		{desc: "default priority", priority: "", want: `warning: ` + "routes/web.routes:" +
			`: route "hello" (priority 14) is never reached on listeners web and websecure: ` +
			`route "default" (priority 15) on listeners web and websecure matches every request it could; ` +
			`give "hello" a priority above 15, narrow "default", or serve "hello" on its other listeners only`},
		{desc: "shipped example", priority: "  priority 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			dir := copyExamples(t, func(rel, s string) string {
				if rel != "routes/web.routes" {
					return s
				}
				if !strings.Contains(s, "listeners web websecure\n  priority 1\n") {
					t.Fatalf("the catch-all of %s has no `priority 1` line", rel)
				}
				return strings.Replace(s, "  priority 1\n", tt.priority, 1) + hello
			})
			out, code := runCLI(t, "validate", "-c", filepath.Join(dir, "edgeway.conf"))
			if code != 0 || !strings.Contains(out, "is valid") {
				t.Fatalf("exit %d, want 0:\n%s", code, out)
			}
			if tt.want == "" {
				if strings.Contains(out, "warning") {
					t.Errorf("warnings:\n%s", out)
				}
				return
			}
			head, tail, _ := strings.Cut(tt.want, "routes/web.routes:")
			if !regexp.MustCompile(regexp.QuoteMeta(head) + `\S*` + regexp.QuoteMeta("routes/web.routes:") + `\d+:1` + regexp.QuoteMeta(tail)).MatchString(out) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

// copyExample copies examples/ to dir, each file through r.
func copyExample(t *testing.T, dir string, r *strings.Replacer) {
	t.Helper()
	src := copyExamples(t, func(_, s string) string { return r.Replace(s) })
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// TestMakeRunExample serves the shipped example the way `make run` does
// (its ports moved to free ones) and checks that the demo backend answers
// through the proxy, in cleartext, over TLS (HTTP/1.1 and HTTP/2) and by
// SNI passthrough, as README promises.
func TestMakeRunExample(t *testing.T) {
	testutil.RequireCurl(t)
	_, web, sec := startExample(t)
	base := "http://localhost:" + web
	tls := "https://localhost:" + sec
	cases := []struct{ desc, args, want string }{
		{"root", base + "/", "hello from the edgeway demo backend\n"},
		{"api", base + "/api/users", "[{\"id\":1,\"name\":\"ada\"}]\n"},
		{"health", base + "/healthz", "ok\n"},
		{"tls", tls + "/", "hello from the edgeway demo backend\n"},
		{"tls api", tls + "/api/users", "[{\"id\":1,\"name\":\"ada\"}]\n"},
		{"passthrough", "https://pass.localhost:" + sec + "/", "hello from the demo TLS backend, reached by SNI passthrough\n"},
	}
	for _, tc := range cases {
		args := []string{tc.args}
		if strings.HasPrefix(tc.args, "https") {
			// The example's certificate is self-signed, made at start.
			args = []string{"-k", "--http2", "--resolve", "pass.localhost:" + sec + ":127.0.0.1", tc.args}
		}
		if out, code := testutil.Curl(t, args...); code != 0 || out != tc.want {
			t.Errorf("%s: exit %d, body %q, want %q", tc.desc, code, out, tc.want)
		}
	}
	// Passthrough shows in the certificate: pass.localhost gets demo-tls's
	// own, which websecure does not hold.
	leaf := func(sni string) *x509.Certificate {
		c, err := cryptotls.Dial("tcp", "127.0.0.1:"+sec, &cryptotls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("TLS to %s: %v", sni, err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	site, pass := leaf("localhost"), leaf("pass.localhost")
	if !slices.Equal(pass.DNSNames, []string{"pass.localhost"}) || slices.Contains(site.DNSNames, "pass.localhost") || site.Equal(pass) {
		t.Errorf("certificates: websecure %v, through passthrough %v; want demo-tls's own for pass.localhost", site.DNSNames, pass.DNSNames)
	}
	out, _ := testutil.Curl(t, "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "-H", "Host: old.example.com", base+"/a/b")
	if out != "308 https://new.example.com/a/b" {
		t.Errorf("redirect: %q", out)
	}
}

// TestReadmeListenerSettings holds README's listener settings table to
// conf.ListenerSettings, where each setting is declared: every setting has
// a row, with its default as the declaration spells it and its reload
// class.
func TestReadmeListenerSettings(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "| setting | default | on reload | what it does |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal("README has no listener settings table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	type row struct{ setting, def, class string }
	var rows []row
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), " | ")
		if len(cells) < 4 {
			t.Fatalf("table line %q has %d cells", line, len(cells))
		}
		rows = append(rows, row{strings.TrimPrefix(cells[0], "| "), cells[1], cells[2]})
	}
	classes := map[conf.ReloadClass]string{conf.Live: "live", conf.Restart: "restart", conf.Identity: "refused"}
	for _, s := range conf.ListenerSettings {
		if s.Directive == "name" { // the block's argument, not a setting
			continue
		}
		i := slices.IndexFunc(rows, func(r row) bool {
			return strings.Contains(r.setting, "`"+s.Directive+" ") || strings.Contains(r.setting, "`"+s.Directive+"`")
		})
		if i < 0 {
			t.Errorf("README's listener settings table has no row for %s", s.Directive)
			continue
		}
		r := rows[i]
		if r.class != classes[s.Class] {
			t.Errorf("%s: README says %q on reload, conf.ListenerSettings %q", s.Directive, r.class, classes[s.Class])
		}
		if want := "`" + strings.TrimSpace(s.Default) + "`"; s.Default != "" && r.def != want {
			t.Errorf("%s: README's default %s, conf.ListenerSettings %s", s.Directive, r.def, want)
		}
	}
}

// docFiles returns README.md and docs/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md under %s (%v)", root, err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	return files
}

var (
	// fenceRE is a fenced code block; codeSpanRE an inline code span,
	// double-backquoted ones first. Neither holds links.
	fenceRE    = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	codeSpanRE = regexp.MustCompile("``.*?``|`[^`\n]*`")
	// linkRE is an inline link or image, [text](target "title").
	linkRE = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
)

// relativeLinks returns the targets of doc's markdown links that name a
// file of the repository: not http(s) or mailto, not an anchor alone.
func relativeLinks(doc string) []string {
	doc = codeSpanRE.ReplaceAllString(fenceRE.ReplaceAllString(doc, ""), "")
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(doc, -1) {
		target := m[1]
		lower := strings.ToLower(target)
		if strings.HasPrefix(target, "#") || strings.HasPrefix(lower, "http://") ||
			strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "mailto:") {
			continue
		}
		out = append(out, target)
	}
	return out
}

// checkLink reports why target, linked from the file from (relative to
// root), names no file of the repository: it leaves root, or it does not
// exist. A leading '/' is the repository root, as on GitHub.
func checkLink(root, from, target string) error {
	p, _, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if dec, err := url.PathUnescape(p); err == nil {
		p = dec
	}
	var abs string
	if strings.HasPrefix(p, "/") {
		abs = filepath.Join(root, filepath.FromSlash(p))
	} else {
		abs = filepath.Join(root, filepath.Dir(from), filepath.FromSlash(p))
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s links to %s, which leaves the repository", from, target)
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("%s links to %s, which is not in the repository (%s)", from, target, rel)
	}
	return nil
}

// TestDocsLinksResolve checks that every relative link of README.md and
// docs/*.md names a file of the repository, so that a fresh clone has
// what the docs point at (issue 17: links to ../shared).
func TestDocsLinksResolve(t *testing.T) {
	root := testutil.ModuleRoot(t)
	n := 0
	for _, f := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range relativeLinks(string(b)) {
			n++
			if err := checkLink(root, f, target); err != nil {
				t.Error(err)
			}
		}
	}
	if n == 0 {
		t.Error("found no relative links at all; is the link pattern broken?")
	}
}

// TestDocsLinkCheck holds the link check itself to what it must refuse
// and let through.
func TestDocsLinkCheck(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"README.md": "", "docs/a.md": "", "examples/x y.conf": ""})
	doc := "see [a](docs/a.md#sec) and [web](https://example.com/x) [top](#top)\n" +
		"`[not](a link)` and ``[nor](this)``\n```\n[code](block)\n```\n![img](<examples/x%20y.conf> \"t\")\n"
	if got, want := relativeLinks(doc), []string{"docs/a.md#sec", "examples/x%20y.conf"}; !slices.Equal(got, want) {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		from, target string
		bad          string // substring of the error; "" for none
	}{
		{"README.md", "docs/a.md", ""},
		{"README.md", "docs/a.md#sec", ""},
		{"docs/a.md", "../README.md", ""},
		{"docs/a.md", "/examples/x%20y.conf", ""},
		{"docs/a.md", "a.md", ""},
		{"README.md", "docs/missing.md", "not in the repository"},
		{"docs/a.md", "README.md", "not in the repository"},
		{"README.md", "../shared/rules-semantics.md", "leaves the repository"},
		{"docs/a.md", "../../x.md", "leaves the repository"},
	} {
		err := checkLink(root, tc.from, tc.target)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s -> %s: %v", tc.from, tc.target, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s -> %s: error %v, want one saying %q", tc.from, tc.target, err, tc.bad)
		case tc.bad != "" && !strings.Contains(err.Error(), tc.target):
			t.Errorf("%s -> %s: error %q does not name the link", tc.from, tc.target, err)
		}
	}
}

// TestDocsTuningNamesEverySetting holds docs/tuning.md to the settings
// `edgeway check-system` reads: each row it prints is named there.
func TestDocsTuningNamesEverySetting(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "docs", "tuning.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := syscheck.Check(syscheck.System{Sys: fstest.MapFS{}}, syscheck.Params{
		Connections: 1, Listeners: []syscheck.Listener{{Name: "NAME"}},
	})
	for _, r := range rows {
		if !strings.Contains(string(doc), "`"+r.Setting+"`") && !strings.Contains(string(doc), "`"+r.Setting+" (") {
			t.Errorf("docs/tuning.md does not name %s (in backquotes)", r.Setting)
		}
	}
}
