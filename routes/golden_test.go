package routes_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/edgeway/edgeway/conf"
)

var update = flag.Bool("update", false, "rewrite the expected part of the golden files in testdata/golden")

// separator divides a golden file: the main file's text above it, the
// compiled configuration (or the errors) below.
const separator = "----------\n"

// TestGolden loads each testdata/golden/*.txt input as a main file named
// main.conf and compares the summary of the result with the expected text.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			golden(t, file)
		})
	}
}

func golden(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	input, want, ok := strings.Cut(string(b), separator)
	if !ok && !*update {
		t.Fatalf("%s: no %q separator line", file, strings.TrimSpace(separator))
	}
	got := run(input)
	if *update {
		if err := os.WriteFile(file, []byte(input+separator+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("%s: got:\n%s\nwant:\n%s", file, got, want)
	}
}

func run(input string) string {
	cfg, err := conf.LoadFS(fstest.MapFS{"main.conf": {Data: []byte(input)}}, "main.conf")
	if err != nil {
		var list *conf.ErrorList
		if !errors.As(err, &list) {
			return "unexpected error type: " + err.Error() + "\n"
		}
		return err.Error() + "\n"
	}
	return summary(cfg)
}

// summary prints a Config deterministically, one line per item.
func summary(c *conf.Config) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("shutdown_grace %v", c.ShutdownGrace)
	p("log access=%v format=%s output=%s level=%s", c.Log.Access, c.Log.Format, c.Log.Output, c.Log.Level)
	if a := c.Admin; a != nil {
		p("admin listen=%s token_file=%q @%s", a.Listen, a.TokenFile, a.Pos)
	}
	for _, l := range c.Listeners {
		p("listen %s addr=%s protocols=%s @%s", l.Name, l.Addr, strings.Join(l.Protocols, ","), l.Pos)
		p("  read_header_timeout=%v idle_timeout=%v max_header_bytes=%d max_body_bytes=%d max_conns=%d backlog=%d",
			l.ReadHeaderTimeout, l.IdleTimeout, l.MaxHeaderBytes, l.MaxBodyBytes, l.MaxConns, l.Backlog)
		p("  reuseport=%v nodelay=%v normalize=%v trusted_proxies=%v not_found_body=%q",
			l.ReusePort, l.NoDelay, l.Normalize, l.TrustedProxies, l.NotFoundBody)
	}
	for _, u := range c.Upstreams {
		p("upstream %s connect=%v response=%v idle=%v max_idle_conns=%d @%s",
			u.Name, u.ConnectTimeout, u.ResponseTimeout, u.IdleTimeout, u.MaxIdleConns, u.Pos)
		for _, s := range u.Servers {
			p("  server %s weight=%d @%s", s.Addr, s.Weight, s.Pos)
		}
	}
	for _, r := range c.Routes {
		p("route %s priority=%d to=%q listeners=%v @%s", r.Name, r.Priority, r.Upstream, r.Listeners, r.Pos)
		if s := r.Split; s != nil {
			splitSummary(p, s)
		}
		p("  match %q", r.RuleText)
		for _, m := range r.Middlewares {
			p("  %s name=%q arg=%q code=%d @%s", m.Kind, m.Name, m.Arg, m.Code, m.Pos)
		}
	}
	for _, r := range c.TCPRoutes {
		p("tcp route %s priority=%d to=%q listeners=%v @%s", r.Name, r.Priority, r.Upstream, r.Listeners, r.Pos)
		p("  match %q", r.RuleText)
	}
	for _, w := range c.Warnings {
		p("warning %s", w)
	}
	return b.String()
}

// splitSummary prints a route's traffic split.
func splitSummary(p func(string, ...any), s *conf.Split) {
	for _, sp := range s.Pools {
		p("  split %s %s @%s", sp.Upstream, conf.ShareText(sp.Share), sp.Pos)
	}
	if st := s.Sticky; st != nil {
		p("  sticky cookie=%q header=%q @%s", st.Cookie, st.Header, st.Pos)
	}
	if rb := s.Rollback; rb != nil {
		p("  rollback error_rate=%v window=%v min_requests=%d @%s", rb.ErrorRate, rb.Window, rb.MinRequests, rb.Pos)
	}
}
