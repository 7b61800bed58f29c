package routes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// referenceInput is one file for the differential test.
type referenceInput struct {
	desc string
	text []byte
}

// referenceInputs returns the golden inputs (the text above the separator,
// and the whole file, expected output included, as a stranger input) and
// every example configuration.
func referenceInputs(t testing.TB) []referenceInput {
	var out []referenceInput
	golden, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	if err != nil || len(golden) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, name := range golden {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		input, _, _ := strings.Cut(string(b), "----------\n")
		out = append(out, referenceInput{name, []byte(input)}, referenceInput{name + " (whole)", b})
	}
	n := len(out)
	err = filepath.WalkDir(filepath.Join("..", "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".conf" && filepath.Ext(path) != ".routes") {
			return err
		}
		b, err := os.ReadFile(path)
		out = append(out, referenceInput{path, b})
		return err
	})
	if err != nil || len(out) == n {
		t.Fatalf("no example configurations: %v", err)
	}
	return out
}

// TestReferenceAgrees parses every golden input and example with Parse and
// with the participle grammar, as a main file and as a route file, and
// wants the same directives and errors.
func TestReferenceAgrees(t *testing.T) {
	t.Parallel()
	for _, in := range referenceInputs(t) {
		for _, kind := range []FileKind{MainFile, RouteFile} {
			t.Run(fmt.Sprintf("%s/kind=%d", in.desc, kind), func(t *testing.T) {
				t.Parallel()
				assertReferenceAgrees(t, in.text, kind)
			})
		}
	}
}

// TestReferenceAgreesOnTricks covers the scanner's repairs, where the two
// parsers are most likely to part.
func TestReferenceAgreesOnTricks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
	}{
		{desc: "empty", src: ""},
		{desc: "only separators", src: "\n;\n;;"},
		{desc: "brace on the next line", src: "route a\n\n{\n match Host(`a`)\n to u }\n"},
		{desc: "one-line block", src: "upstream u { server a:1 weight 2; connect_timeout 1s }"},
		{desc: "unclosed brace", src: "route a {\n match Host(`a`)\n"},
		{desc: "stray closing brace", src: "}\nroute a { }\n}"},
		{desc: "dropped brace mutes", src: "{ route a { x } }\nlog { level info }"},
		{desc: "string as a name", src: "\"x\" y z\nlog { level info }"},
		{desc: "unterminated strings", src: "log { output \"abc\n format `x"},
		{desc: "bad escape", src: "route a { respond 200 \"\\q\" }"},
		{desc: "nested blocks", src: "upstream u { server a:1\n health { path /h; expect 200-299 } }"},
		{desc: "match expression with braces", src: "route a { match Host(`{a}`) && (Path(`/`) || !Method(`GET`)) to u }"},
		{desc: "crlf", src: "route a {\r\n match Host(`a`)\r\n to u\r\n}\r\n"},
		{desc: "split line", src: "admin { listen :9900 token_file /x }"},
		{desc: "tcp route", src: "tcp route t { match HostSNI(`*`) to u }"},
		{desc: "bytes", src: "\xff\xfe{\x00}"},
		// Found by FuzzReferenceAgrees: a word muted inside a dropped
		// brace left the scanner mid-statement, so the string after it
		// reached the grammar where a directive name belongs.
		{desc: "string after a dropped brace", src: "a b c{{d}\""},
		{desc: "brace after a dropped brace", src: "{a}{b}\nroute x { {y} \"z\" }"},
		{desc: "match after a dropped brace", src: "route x { {y} match Host(`a`) }"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			assertReferenceAgrees(t, []byte(tt.src), MainFile)
			assertReferenceAgrees(t, []byte(tt.src), RouteFile)
		})
	}
}

// FuzzReferenceAgrees holds Parse to the participle grammar on any input,
// read as a main file and as a route file.
func FuzzReferenceAgrees(f *testing.F) {
	for _, in := range referenceInputs(f) {
		f.Add(in.text)
	}
	seed(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		assertReferenceAgrees(t, src, MainFile)
		assertReferenceAgrees(t, src, RouteFile)
	})
}

func assertReferenceAgrees(t *testing.T, src []byte, kind FileKind) {
	t.Helper()
	fast, fastErrs := Parse("in.conf", src, kind)
	ref, refErrs := ParseReference("in.conf", src, kind)
	if ref == nil {
		// The scanner promises a token stream that fits the grammar.
		t.Errorf("the grammar failed on %q: %v", src, refErrs)
	}
	if got, want := dumpFile(fast), dumpFile(ref); got != want {
		t.Errorf("directives differ for %q\nParse:\n%s\nParseReference:\n%s", src, got, want)
	}
	if got, want := dumpErrors(fastErrs), dumpErrors(refErrs); got != want {
		t.Errorf("errors differ for %q\nParse:\n%s\nParseReference:\n%s", src, got, want)
	}
}

// dumpFile prints a parsed file with every position, one line per
// directive or argument, so that two trees compare as strings and differ
// readably.
func dumpFile(f *File) string {
	if f == nil {
		return "<nil>\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kind=%d source=%q\n", f.Kind, f.Source.Text)
	dumpDirectives(&b, f.Directives, "")
	return b.String()
}

func dumpDirectives(b *strings.Builder, dirs []*Directive, indent string) {
	for _, d := range dirs {
		fmt.Fprintf(b, "%s%q @%s+%d in %s\n", indent, d.Name, d.Pos, d.Pos.Offset, d.Kind)
		for _, a := range d.Args {
			fmt.Fprintf(b, "%s  arg %d %q @%s+%d..%s+%d\n", indent, a.Kind, a.Value, a.Pos, a.Pos.Offset, a.End, a.End.Offset)
		}
		if d.Block != nil {
			fmt.Fprintf(b, "%s  { @%s+%d\n", indent, d.Block.Pos, d.Block.Pos.Offset)
			dumpDirectives(b, d.Block.Directives, indent+"    ")
			fmt.Fprintf(b, "%s  }\n", indent)
		}
	}
}

func dumpErrors(errs ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "%s+%d: %s | %q\n", e.Pos, e.Pos.Offset, e.Msg, e.Source)
	}
	return b.String()
}

// BenchmarkParseReference10k is BenchmarkParse10k through the participle
// grammar, to keep the price of the reference on record.
func BenchmarkParseReference10k(b *testing.B) {
	text := []byte(testutil.RouteFile(testutil.RouteFileSpec{Routes: 10000, Pools: 50}))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := ParseReference("big.routes", text, RouteFile); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
