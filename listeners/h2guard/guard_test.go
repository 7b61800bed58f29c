package h2guard

import (
	"bytes"
	"io"
	"net"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// frames encodes what write puts through a Framer, after the preface.
func frames(t testing.TB, write func(fr *http2.Framer, enc func(kv ...string) []byte)) []byte {
	var b, hb bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	e := hpack.NewEncoder(&hb)
	write(fr, func(kv ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			e.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return bytes.Clone(hb.Bytes())
	})
	return b.Bytes()
}

// pass feeds in through a guard in reads of at most chunk bytes and
// returns what the server side read and the violation, if any.
func pass(in []byte, chunk int) ([]byte, *Violation) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	go func() {
		for len(in) > 0 {
			k := min(chunk, len(in))
			if _, err := c2.Write(in[:k]); err != nil {
				return
			}
			in = in[k:]
		}
		c2.Close()
	}()
	go io.Copy(io.Discard, c2)
	g := newConn(c1, Config{})
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := g.Read(buf)
		got = append(got, buf[:n]...)
		if v, ok := err.(*Violation); ok {
			return got, v
		}
		if err != nil {
			return got, nil
		}
	}
}

func TestGuardChecks(t *testing.T) {
	req := []string{":method", "GET", ":scheme", "http", ":path", "/", ":authority", "a"}
	tests := []struct {
		desc  string
		write func(fr *http2.Framer, enc func(kv ...string) []byte)
		code  uint32 // 0: no violation
	}{
		{desc: "plain request", write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(req...), EndHeaders: true, EndStream: true})
		}},
		{desc: "padded request with priority", write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(append(req, "te", "trailers")...), EndHeaders: true,
				PadLength: 7, Priority: http2.PriorityParam{Weight: 3}})
		}},
		{desc: "connection header", code: codeProtocol, write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(append(req, "connection", "close")...), EndHeaders: true})
		}},
		{desc: "te gzip in a CONTINUATION", code: codeProtocol, write: func(fr *http2.Framer, enc func(...string) []byte) {
			b := enc(append(req, "te", "gzip")...)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:3]})
			fr.WriteContinuation(1, true, b[3:])
		}},
		{desc: "frame too large", code: codeFrameSize, write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteData(1, true, make([]byte, 16385))
		}},
		{desc: "CONTINUATION flood", code: codeCalm, write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(req...)})
			for range 2000 {
				fr.WriteContinuation(1, false, nil)
			}
		}},
		{desc: "PING flood", code: codeCalm, write: func(fr *http2.Framer, enc func(...string) []byte) {
			for range 3000 {
				fr.WritePing(false, [8]byte{})
			}
		}},
		{desc: "frame inside a block", code: codeProtocol, write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(req...)})
			fr.WritePing(false, [8]byte{})
		}},
	}
	for _, tc := range tests {
		for _, chunk := range []int{1, 7, 4096} {
			in := frames(t, tc.write)
			got, v := pass(in, chunk)
			switch {
			case tc.code == 0 && v != nil:
				t.Errorf("%s (reads of %d): violation %v", tc.desc, chunk, v)
			case tc.code == 0 && !bytes.Equal(got, in):
				t.Errorf("%s (reads of %d): the server read %d bytes of %d", tc.desc, chunk, len(got), len(in))
			case tc.code != 0 && (v == nil || v.Code != tc.code):
				t.Errorf("%s (reads of %d): violation %v, want code %d", tc.desc, chunk, v, tc.code)
			}
		}
	}
}

func TestDedupeSettings(t *testing.T) {
	in := frames(t, func(fr *http2.Framer, _ func(...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
	})
	got, v := pass(in, 4096)
	if v != nil {
		t.Fatal(v)
	}
	fr := http2.NewFramer(nil, bytes.NewReader(got[len(http2.ClientPreface):]))
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf := f.(*http2.SettingsFrame)
	if sf.HasDuplicates() {
		t.Fatal("duplicates left")
	}
	if v, ok := sf.Value(http2.SettingInitialWindowSize); !ok || v != 1 {
		t.Errorf("INITIAL_WINDOW_SIZE %d (%v), want the last value, 1", v, ok)
	}
}

// FuzzScan feeds arbitrary client bytes: the guard never panics, and it
// passes the server a prefix of what it read.
func FuzzScan(f *testing.F) {
	f.Add(frames(f, func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: 4, Val: 1}, http2.Setting{ID: 4, Val: 2})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(":path", "/"), PadLength: 2})
		fr.WriteContinuation(1, true, nil)
	}), 3)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		if chunk <= 0 || chunk > 1<<16 {
			chunk = 1
		}
		g := newConn(nil, Config{})
		g.in.skip = 0
		passed := 0
		for off := 0; off < len(in); off += chunk {
			p := in[off:min(len(in), off+chunk)]
			k, v := g.in.scan(p)
			if k < 0 || k > len(p) {
				t.Fatalf("scan passed %d of %d bytes", k, len(p))
			}
			passed += k
			if v != nil {
				break
			}
		}
		if passed > len(in) {
			t.Fatalf("passed %d of %d", passed, len(in))
		}
	})
}
