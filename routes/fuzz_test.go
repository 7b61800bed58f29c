package routes

import (
	"os"
	"path/filepath"
	"testing"
)

// seed adds the example configuration and a few awkward inputs.
func seed(f *testing.F, files ...string) {
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "{", "}", "\"", "`", "match", "route a { match (Host(`a`)\n || \"x\\q\" }",
		"listen a { addr :80 protocols http1 h2c }\nadmin { listen :1 token_file /x }",
		"tcp route t { match HostSNI(`*`) to u }\nupstream u { server a:1 weight 2 }",
		"route a\n{\n match Host(`a`) Path(`/`) to u; priority 3 }\n}\n{ x }",
		"route a { match /* ( */ Host(`a`) // x\n}", "\xff\xfe{\x00}", "# only a comment",
		"route s { match Path(`/`)\n to a 90%, b 10%\n sticky cookie c\n rollback { error_rate 5% over 30s; min_requests 100 }\n}",
		"route s { match Path(`/`) to a 95% , b 5% priority 3 }",
	} {
		f.Add([]byte(s))
	}
}

// checkInvariants asserts what must hold for any input: no panic, every
// error inside the input with line and column from 1 and consistent with
// its offset, and every argument framed by its offsets.
func checkInvariants(t *testing.T, src []byte, kind FileKind) {
	f, errs := Parse("fuzz", src, kind)
	s := NewSource("fuzz", src)
	for _, e := range errs {
		if e.Pos.Line < 1 || e.Pos.Col < 1 || e.Pos.Offset < 0 || e.Pos.Offset > len(src) {
			t.Fatalf("error outside the input: %+v", e)
		}
		if s.Pos(e.Pos.Offset) != e.Pos {
			t.Fatalf("error position %+v disagrees with its offset (%+v)", e.Pos, s.Pos(e.Pos.Offset))
		}
	}
	if f != nil {
		walkArgs(t, src, f.Directives)
	}
}

func walkArgs(t *testing.T, src []byte, dirs []*Directive) {
	for _, d := range dirs {
		if d.Pos.Line < 1 || d.Pos.Col < 1 {
			t.Fatalf("directive %q at %+v", d.Name, d.Pos)
		}
		for _, a := range d.Args {
			if a.Pos.Offset < 0 || a.End.Offset > len(src) || a.Pos.Offset > a.End.Offset {
				t.Fatalf("argument %q spans %d-%d of %d bytes", a.Value, a.Pos.Offset, a.End.Offset, len(src))
			}
			if a.Kind != String && string(src[a.Pos.Offset:a.End.Offset]) != a.Value {
				t.Fatalf("argument %q is not its source text %q", a.Value, src[a.Pos.Offset:a.End.Offset])
			}
		}
		if d.Block != nil {
			walkArgs(t, src, d.Block.Directives)
		}
	}
}

func FuzzParseMain(f *testing.F) {
	seed(f, filepath.Join("..", "examples", "edgeway.conf"))
	f.Fuzz(func(t *testing.T, src []byte) { checkInvariants(t, src, MainFile) })
}

func FuzzParseRoutes(f *testing.F) {
	seed(f, filepath.Join("..", "examples", "routes", "web.routes"), filepath.Join("..", "examples", "routes", "demo.routes"))
	f.Fuzz(func(t *testing.T, src []byte) { checkInvariants(t, src, RouteFile) })
}
