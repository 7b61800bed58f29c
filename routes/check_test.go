package routes

import (
	"strings"
	"testing"
	"time"
)

func TestVocabularyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		kind FileKind
		src  string
		want []string
	}{
		{desc: "unknown directive lists the vocabulary", kind: RouteFile, src: "upstream u {\n  servr a:1\n}\n",
			want: []string{`2:3: unknown directive "servr" in upstream block (expected server, connect_timeout, response_timeout, idle_timeout, max_idle_conns, balance, health, outlier, breaker, panic_threshold, slow_start, retries, max_requests, max_connections, max_pending, send_proxy, protocol, fallback, tls); did you mean "server"?`}},
		{desc: "main-only in route file", kind: RouteFile, src: "listen a { addr :80 }\nshutdown_grace 1s\ninclude \"x\"\n",
			want: []string{`1:1: "listen" is only allowed in the main file`, `2:1: "shutdown_grace" is only allowed`, `3:1: "include" is only allowed`}},
		{desc: "missing brace names the next line", kind: RouteFile, src: "route api\n  match Host(`a`)\n",
			want: []string{`2:3: expected "{" after route name, got "match"`}},
		{desc: "word instead of brace", kind: RouteFile, src: "route api match {\n}\n",
			want: []string{`1:11: expected "{" after route name, got "match"`}},
		{desc: "missing name", kind: MainFile, src: "listen {\n  addr :80\n}\n",
			want: []string{`1:8: expected NAME after "listen", got "{"`}},
		{desc: "missing value", kind: RouteFile, src: "upstream u {\n  connect_timeout\n}\n",
			want: []string{`2:18: expected DURATION after "connect_timeout"`}},
		{desc: "too many values", kind: RouteFile, src: "upstream u {\n  connect_timeout 1s 2s\n}\n",
			want: []string{`2:22: expected a new line or ";" after connect_timeout DURATION, got "2s"`}},
		{desc: "server weight without number", kind: RouteFile, src: "upstream u { server a:1 weight }\n",
			want: []string{`1:31: expected ADDR [weight N] after "server"`}},
		{desc: "block where none belongs", kind: RouteFile, src: "route a {\n  to u { }\n}\n",
			want: []string{`2:8: unexpected "{": "to" takes no block`}},
		{desc: "duplicate single-use directive", kind: RouteFile, src: "route a {\n  to u\n  to v\n}\n",
			want: []string{`3:3: duplicate "to" in route block (first at line 2)`}},
		{desc: "tcp without route", kind: RouteFile, src: "tcp db { }\n",
			want: []string{`1:1: expected "route" after "tcp", got "db"`}},
		{desc: "route directive in tcp route", kind: RouteFile, src: "tcp route db {\n  strip_prefix /a\n}\n",
			want: []string{`2:3: unknown directive "strip_prefix" in tcp route block (expected match, to, priority, listeners, tls)`}},
		{desc: "errors inside a bad block are reported", kind: MainFile, src: "listen {\n  adr :80\n}\n",
			want: []string{`1:8: expected NAME`, `2:3: unknown directive "adr" in listen block`}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, errs := Parse("t", []byte(tt.src), tt.kind)
			assertErrors(t, errs, tt.want)
		})
	}
}

func TestOneLineBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want string // directive name(arg,arg) ... inside the first block
	}{
		{desc: "admin", src: "admin { listen 127.0.0.1:9900  token_file /x }", want: "listen(127.0.0.1:9900) token_file(/x)"},
		{desc: "variadic stops at a directive", src: "listen w { addr :80 protocols http1 h2c idle_timeout 5s }",
			want: "addr(:80) protocols(http1,h2c) idle_timeout(5s)"},
		{desc: "servers with weights", src: "upstream u { server a:1 weight 2 server b:1 max_idle_conns 3 }",
			want: "server(a:1,weight,2) server(b:1) max_idle_conns(3)"},
		{desc: "semicolons", src: "route r { match Path(`/`); listeners a b; respond 200 \"ok\" }",
			want: "match(Path(`/`)) listeners(a,b) respond(200,ok)"},
		{desc: "tcp route", src: "tcp route db { match HostSNI(`db`) to pg }", want: "match(HostSNI(`db`)) to(pg)"},
		{desc: "tls and h2 are protocols, not blocks", src: "listen w { protocols http1 tls h2 idle_timeout 5s tls { } }",
			want: "protocols(http1,tls,h2) idle_timeout(5s) tls()"},
		{desc: "no optional port", src: "listen w { redirect_https idle_timeout 5s }", want: "redirect_https() idle_timeout(5s)"},
		{desc: "optional port", src: "listen w { redirect_https 8443 addr :80 }", want: "redirect_https(8443) addr(:80)"},
		{desc: "proxy_protocol", src: "listen w { proxy_protocol trusted 10.0.0.0/8 ::1 addr :80 }",
			want: "proxy_protocol(trusted,10.0.0.0/8,::1) addr(:80)"},
		{desc: "certs", src: "tls { cert a.pem a.key cert b.pem b.key default self_signed a b ocsp_stapling off }",
			want: "cert(a.pem,a.key) cert(b.pem,b.key,default) self_signed(a,b) ocsp_stapling(off)"},
		{desc: "redirect_https in a route", src: "route r { match Path(`/`) redirect_https to u }", want: "match(Path(`/`)) redirect_https() to(u)"},
		{desc: "redirect_https code and port", src: "route r { redirect_https 301 8443 to u }", want: "redirect_https(301,8443) to(u)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f, errs := Parse("t.conf", []byte(tt.src), MainFile)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var parts []string
			for _, d := range f.Directives[0].Block.Directives {
				var args []string
				for _, a := range d.Args {
					args = append(args, a.Value)
				}
				parts = append(parts, d.Name+"("+strings.Join(args, ",")+")")
			}
			if got := strings.Join(parts, " "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	_, errs := Parse("main.conf", []byte("upstream u {\n\tservr a:1\n}\n"), MainFile)
	want := "main.conf:2:2: unknown directive \"servr\" in upstream block (expected server, connect_timeout, " +
		"response_timeout, idle_timeout, max_idle_conns, balance, health, outlier, breaker, panic_threshold, slow_start, retries, max_requests, max_connections, max_pending, send_proxy, protocol, fallback, tls); did you mean \"server\"?\n    \tservr a:1\n    \t^"
	if got := errs.Error(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	durations := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "5s", want: 5 * time.Second}, {in: "250ms", want: 250 * time.Millisecond},
		{in: "1m30s", want: 90 * time.Second}, {in: "0s"}, {in: "5", bad: true}, {in: "-1s", bad: true}, {in: "5x", bad: true},
	}
	for _, tt := range durations {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v", tt.in, got, err)
		}
	}
	sizes := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "512", want: 512}, {in: "16KB", want: 16000}, {in: "4KiB", want: 4096}, {in: "1MiB", want: 1 << 20},
		{in: "2kib", want: 2048}, {in: "10B", want: 10}, {in: "1GB", want: 1e9},
		{in: "KiB", bad: true}, {in: "-1", bad: true}, {in: "1.5KiB", bad: true}, {in: "9999999999999GiB", bad: true},
	}
	for _, tt := range sizes {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseSize(%q) = %v, %v", tt.in, got, err)
		}
	}
	for in, want := range map[string]bool{"on": true, "off": false} {
		if got, err := ParseSwitch(in); err != nil || got != want {
			t.Errorf("ParseSwitch(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseSwitch("yes"); err == nil {
		t.Error("ParseSwitch(yes) accepted")
	}
	if _, err := ParseInt("12a"); err == nil {
		t.Error("ParseInt(12a) accepted")
	}
}
