package tracing

import (
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

func TestParseTraceparent(t *testing.T) {
	t.Parallel()
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		desc  string
		in    string
		ok    bool
		flags byte
	}{
		{desc: "spec example", in: valid, ok: true, flags: 1},
		{desc: "not sampled", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", ok: true, flags: 0},
		{desc: "other flags kept", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", ok: true, flags: 3},
		{desc: "surrounding spaces", in: " \t" + valid + " ", ok: true, flags: 1},
		{desc: "later version", in: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ok: true, flags: 1},
		{desc: "later version with more fields", in: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", ok: true, flags: 1},
		{desc: "later version, no dash after flags", in: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", ok: false},
		{desc: "version ff", in: "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ok: false},
		{desc: "version 00 too long", in: valid + "-00", ok: false},
		{desc: "too short", in: valid[:54], ok: false},
		{desc: "empty", in: "", ok: false},
		{desc: "zero trace-id", in: "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ok: false},
		{desc: "zero parent-id", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ok: false},
		{desc: "upper-case hex", in: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ok: false},
		{desc: "bad hex in trace-id", in: "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", ok: false},
		{desc: "bad hex in parent-id", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01", ok: false},
		{desc: "bad hex in flags", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", ok: false},
		{desc: "bad version", in: "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ok: false},
		{desc: "wrong separators", in: "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", ok: false},
		{desc: "short trace-id", in: "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01a", ok: false},
		{desc: "two values joined", in: valid + "," + valid, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			c, ok := ParseTraceparent(tt.in)
			if ok != tt.ok {
				t.Fatalf("ParseTraceparent(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			}
			if !ok {
				if c != (SpanContext{}) {
					t.Errorf("invalid value gave %+v", c)
				}
				return
			}
			if c.Flags != tt.flags {
				t.Errorf("flags %02x, want %02x", c.Flags, tt.flags)
			}
			out := string(AppendTraceparent(nil, c))
			if want := "00" + strings.TrimSpace(tt.in)[2:55]; out != want {
				t.Errorf("formatted %q, want %q", out, want)
			}
		})
	}
}

func TestParseTraceparentAllocs(t *testing.T) {
	const v = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var buf [TraceparentLen]byte
	n := testing.AllocsPerRun(100, func() {
		c, ok := ParseTraceparent(v)
		if !ok {
			t.Fatal("not parsed")
		}
		_ = AppendTraceparent(buf[:0], c)
	})
	if n != 0 {
		t.Errorf("%v allocations per parse and format, want 0", n)
	}
}

// FuzzParseTraceparent checks the properties of anything that parses: its
// ids are not zero, and formatting it gives back the value's first 55
// bytes (version 00 whatever the version was), which parse to the same.
func FuzzParseTraceparent(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-0000000000000000-00",
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\t",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := ParseTraceparent(v)
		if !ok {
			if c != (SpanContext{}) {
				t.Fatalf("invalid %q gave %+v", v, c)
			}
			return
		}
		if isZero(c.TraceID[:]) || isZero(c.SpanID[:]) {
			t.Fatalf("%q parsed to a zero id", v)
		}
		trimmed := httpsyntax.TrimOWS(v)
		if trimmed[:2] == "ff" {
			t.Fatalf("version ff %q parsed", v)
		}
		if trimmed[:2] == "00" && len(trimmed) != TraceparentLen {
			t.Fatalf("version 00 of length %d parsed: %q", len(trimmed), v)
		}
		out := string(AppendTraceparent(nil, c))
		if out[2:] != trimmed[2:TraceparentLen] {
			t.Fatalf("%q formatted as %q", v, out)
		}
		if again, ok := ParseTraceparent(out); !ok || again != c {
			t.Fatalf("%q: reparsing %q gave %+v, %v", v, out, again, ok)
		}
	})
}
