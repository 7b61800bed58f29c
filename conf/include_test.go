package conf

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestIncludeOrder(t *testing.T) {
	t.Parallel()
	main := "listen web { addr :80 }\nupstream u { server a:1 }\n" +
		"route first { match Path(`/1`); to u }\n" +
		"include \"routes/*.routes\"\n" +
		"include \"extra/z.routes\"\n" +
		"route last { match Path(`/9`); to u }\n"
	cfg, err := loadString(t, main,
		"routes/b.routes", "route b { match Path(`/b`); to u }\n",
		"routes/a.routes", "route a1 { match Path(`/a1`); to u }\nroute a2 { match Path(`/a2`); to u }\n",
		"routes/c.routes", "route c { match Path(`/c`); to u }\n",
		"routes/ignored.txt", "not a route file",
		"extra/z.routes", "route z { match Path(`/z`); to u }\n",
	)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range cfg.Routes {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "first a1 a2 b c z last" {
		t.Errorf("route order = %s", got)
	}
	if got := strings.Join(cfg.Files, " "); got != "main.conf routes/a.routes routes/b.routes routes/c.routes extra/z.routes" {
		t.Errorf("files = %s", got)
	}
}

func TestIncludeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		main  string
		files []string
		want  []string
	}{
		{desc: "matches nothing", main: "include \"routes/*.routes\"\n",
			want: []string{`main.conf:1:9: include "routes/*.routes" matched no files`}},
		{desc: "bad pattern", main: "include \"routes/[\"\n",
			want: []string{`main.conf:1:9: include "routes/[": invalid pattern`}},
		{desc: "absolute pattern in an fs.FS", main: "include /etc/x.routes\n",
			want: []string{`main.conf:1:9: include "/etc/x.routes": absolute include patterns are not supported here`}},
		{desc: "main-only directive in a route file", main: "include \"r/*\"\n",
			files: []string{"r/a.routes", "listen web { addr :80 }\nadmin { }\n"},
			want:  []string{`r/a.routes:1:1: "listen" is only allowed in the main file`, `r/a.routes:2:1: "admin" is only allowed in the main file`}},
		{desc: "errors in every file are reported, in load order", main: "listen web { addr :80 }\ninclude \"r/*\"\nroute m { match Path(`/`); to nope }\n",
			files: []string{
				"r/b.routes", "route b {\n  match Path(`/b`)\n  to u\n  bogus\n}\n",
				"r/a.routes", "upstream u {\n  server a:1 weight x\n}\nroute a { match Path(`/a`) to u\n",
			},
			want: []string{
				`main.conf:3:31: unknown upstream "nope"`,
				`r/a.routes:2:21: weight: invalid number "x"`,
				`r/a.routes:4:9: "{" is never closed`,
				`r/b.routes:4:3: unknown directive "bogus" in route block`,
			}},
		{desc: "the same file twice", main: "include \"r/a.routes\"\ninclude \"r/*.routes\"\nlisten web { addr :80 }\n",
			files: []string{"r/a.routes", "upstream u { server a:1 }\nroute a { match Path(`/a`); to u }\n"},
			want:  []string{`main.conf:2:9: include "r/*.routes": r/a.routes is already loaded`}},
		{desc: "duplicates across files", main: "include \"r/*\"\nlisten web { addr :80 }\n",
			files: []string{"r/a.routes", "upstream u { server a:1 }\nroute x { match Path(`/a`); to u }\n",
				"r/b.routes", "route x { match Path(`/b`); to u }\n"},
			want: []string{`r/b.routes:1:7: duplicate route name "x" (first defined at r/a.routes:2:7)`}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, err := loadString(t, tt.main, tt.files...)
			if err == nil {
				t.Fatal("no error")
			}
			got := diagnostics(t, err)
			if len(got) != len(tt.want) {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// FuzzLoad loads arbitrary main files (with one route file to include) and
// checks that every diagnostic points inside a file.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("listen web { addr :80 }\ninclude \"r.routes\"\n"), []byte("upstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"))
	f.Add([]byte("route a { match Host(`a`) && PathRegexp(`[`)\n to x }"), []byte("listen a { addr :1 }"))
	f.Add([]byte("tcp route t { match HostSNI(`*`) || ALPN(`h2`); to u }\nupstream u { server b:2 weight 3 }"), []byte(""))
	f.Add([]byte("tls { cert a.pem a.key default; self_signed *.a.example }\nlisten s { addr :443; protocols tls h2; tls { min_version 1.3; curves X25519 } h2 { max_frame_size 1MiB } }\n"+
		"listen w { addr :80; redirect_https 8443; proxy_protocol trusted 10.0.0.0/8 }\ninclude \"r.routes\""),
		[]byte("upstream u { server a:1; send_proxy v2; protocol h2c }\nroute r { match Path(`/`); redirect_https 301; to u }\n"))
	f.Fuzz(func(t *testing.T, main, routes []byte) {
		fsys := fstest.MapFS{"main.conf": {Data: main}, "r.routes": {Data: routes}}
		cfg, err := LoadFS(fsys, "main.conf")
		if err == nil {
			checkPositions(t, cfg.Warnings)
			return
		}
		list, ok := err.(*ErrorList)
		if !ok || len(*list) == 0 {
			t.Fatalf("error %v is not a non-empty *ErrorList", err)
		}
		checkPositions(t, *list)
	})
}

func checkPositions(t *testing.T, diags []Diagnostic) {
	for _, d := range diags {
		if d.Pos.File == "" || (d.Pos.Line < 1 || d.Pos.Col < 1) && d.Msg != "no listen block: nothing will be served" {
			t.Fatalf("diagnostic without a position: %+v", d)
		}
	}
}
