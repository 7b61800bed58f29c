package h2guard

import (
	"bytes"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

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
		{desc: "PINGs up to the limit", write: func(fr *http2.Framer, enc func(...string) []byte) {
			for range 1000 {
				fr.WritePing(false, [8]byte{})
			}
		}},
		{desc: "one PING over the limit", code: codeCalm, write: func(fr *http2.Framer, enc func(...string) []byte) {
			for range 1001 {
				fr.WritePing(false, [8]byte{})
			}
		}},
		{desc: "frame inside a block", code: codeProtocol, write: func(fr *http2.Framer, enc func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(req...)})
			fr.WritePing(false, [8]byte{})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			// Virtual time: the floods arrive within one second however
			// slowly reads of one byte go on a busy machine.
			synctest.Test(t, func(t *testing.T) {
				for _, chunk := range []int{1, 7, 4096} {
					in := frames(t, tc.write)
					got, v := pass(in, chunk)
					switch {
					case tc.code == 0 && v != nil:
						t.Errorf("reads of %d: violation %v", chunk, v)
					case tc.code == 0 && !bytes.Equal(got, in):
						t.Errorf("reads of %d: the server read %d bytes of %d", chunk, len(got), len(in))
					case tc.code != 0 && (v == nil || v.Code != tc.code):
						t.Errorf("reads of %d: violation %v, want code %d", chunk, v, tc.code)
					}
				}
			})
		})
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

// serverFrames encodes what write puts through a Framer.
func serverFrames(write func(fr *http2.Framer)) []byte {
	var b bytes.Buffer
	write(http2.NewFramer(&b, nil))
	return b.Bytes()
}

// TestGoAwayMidFrame ends a connection while the server is in the middle
// of writing a frame: the GOAWAY follows the end of that frame and
// nothing after it; a server that never finishes its frame gets none
// after goAwayWait.
func TestGoAwayMidFrame(t *testing.T) {
	tests := []struct {
		desc   string
		finish bool // the server writes the rest of its frame
	}{
		{desc: "frame finished", finish: true},
		{desc: "frame never finished"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testGoAwayMidFrame(t, tc.finish) })
		})
	}
}

func testGoAwayMidFrame(t *testing.T, finish bool) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	g := newConn(c1, Config{})
	client := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(c2)
		client <- b
	}()
	out := serverFrames(func(fr *http2.Framer) {
		fr.WritePing(true, [8]byte{1})
		fr.WritePing(true, [8]byte{2})
	})
	if _, err := g.Write(out[:5]); err != nil {
		t.Fatal(err)
	}
	go func() {
		var big [9]byte
		putFrameHeader(big[:], 1<<20, frameData, 0, 1)
		c2.Write(append([]byte(http2.ClientPreface), big[:]...))
	}()
	start := time.Now()
	read := make(chan error)
	go func() {
		_, err := g.Read(make([]byte, 64))
		read <- err
	}()
	synctest.Wait()
	want := out[:5]
	if finish {
		n, err := g.Write(out[5:])
		if n != 12 || err != ErrClosed {
			t.Errorf("Write finishing the frame: %d, %v; want 12, ErrClosed", n, err)
		}
		want = out[:17]
	}
	err := <-read
	if v, ok := err.(*Violation); !ok || v.Code != codeFrameSize {
		t.Fatalf("Read: %v, want a FRAME_SIZE_ERROR violation", err)
	}
	if took := time.Since(start); !finish && took != goAwayWait {
		t.Errorf("gave up on the GOAWAY after %v, want %v", took, goAwayWait)
	}
	if _, err := g.Write(out[17:]); err != ErrClosed {
		t.Errorf("Write after the end: %v, want ErrClosed", err)
	}
	g.Close()
	got := <-client
	if !bytes.HasPrefix(got, want) {
		t.Fatalf("client read % x, want % x first", got, want)
	}
	rest := got[len(want):]
	if !finish {
		if len(rest) != 0 {
			t.Errorf("client read % x after the unfinished frame", rest)
		}
		return
	}
	f, err := http2.NewFramer(nil, bytes.NewReader(rest)).ReadFrame()
	if ga, ok := f.(*http2.GoAwayFrame); err != nil || !ok || ga.ErrCode != http2.ErrCodeFrameSize {
		t.Fatalf("after the frame: %v, %v; want GOAWAY FRAME_SIZE_ERROR", f, err)
	}
	if len(rest) != 17 {
		t.Errorf("client read %d bytes after the frame, want the GOAWAY's 17", len(rest))
	}
}

// TestFrameEnd checks, at every split of a run of frames, that frameEnd
// finds the next frame boundary.
func TestFrameEnd(t *testing.T) {
	out := serverFrames(func(fr *http2.Framer) {
		fr.WritePing(true, [8]byte{})
		fr.WriteData(1, false, nil)
		fr.WriteData(1, true, make([]byte, 300))
		fr.WriteSettingsAck()
	})
	ends := []int{17, 26, 335, 344}
	for i := range out {
		var o output
		o.advance(out[:i])
		if o.atBoundary() {
			continue
		}
		next := 0
		for _, e := range ends {
			if e > i {
				next = e
				break
			}
		}
		if got := i + o.frameEnd(out[i:]); got != next {
			t.Errorf("split at %d: frame ends at %d, want %d", i, got, next)
		}
		if got := o.frameEnd(out[i:i+1]) + i; i+1 < next && got != i+1 {
			t.Errorf("split at %d, one byte: %d", i, got)
		}
	}
}

// TestControlWindow checks the control frame limit against virtual time:
// a window opens at its first frame and lasts a second.
func TestControlWindow(t *testing.T) {
	ping := frames(t, func(fr *http2.Framer, _ func(...string) []byte) { fr.WritePing(false, [8]byte{}) })[len(http2.ClientPreface):]
	tests := []struct {
		desc  string
		pause time.Duration // between the first 1000 PINGs and the next
		next  int
		bad   bool
	}{
		{desc: "next window", pause: time.Second, next: 1000},
		{desc: "same window", pause: time.Second - time.Millisecond, next: 1, bad: true},
		{desc: "next window over the limit", pause: time.Second, next: 1001, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newConn(nil, Config{})
				g.in.skip = 0
				send := func(n int) *Violation {
					for range n {
						if _, v := g.in.scan(ping); v != nil {
							return v
						}
					}
					return nil
				}
				time.Sleep(time.Hour) // a quiet start does not count
				if v := send(1000); v != nil {
					t.Fatalf("first 1000: %v", v)
				}
				time.Sleep(tc.pause)
				if v := send(tc.next); (v != nil) != tc.bad {
					t.Errorf("after %v, %d more: violation %v, want one: %v", tc.pause, tc.next, v, tc.bad)
				}
			})
		})
	}
}

// TestValidWireName: the field names HTTP/2 allows, as x/net's framer
// judges them (a lower-case token).
func TestValidWireName(t *testing.T) {
	for name, want := range map[string]bool{
		"x-up": true, "accept": true, "x_1!#$%&'*+.^`|~": true,
		"": false, "X-Up": false, "x up": false, "x:y": false, "é": false, "x\x00": false,
	} {
		if got := validWireName(name); got != want {
			t.Errorf("validWireName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestPingEarnedByAnswers: a PING that follows a HEADERS or DATA frame
// the server wrote is not counted against MaxControlPerSecond (a gRPC
// client's BDP PINGs, one per round trip while it receives data), while
// PINGs with only control frames (a SETTINGS ack) between them still
// are. Virtual time: all of it in one second.
func TestPingEarnedByAnswers(t *testing.T) {
	ping := frames(t, func(fr *http2.Framer, _ func(...string) []byte) { fr.WritePing(false, [8]byte{}) })[len(http2.ClientPreface):]
	var data, ack bytes.Buffer
	http2.NewFramer(&data, nil).WriteData(1, false, []byte("answer"))
	http2.NewFramer(&ack, nil).WriteSettingsAck()
	for _, tc := range []struct {
		desc   string
		server []byte // written by the server before each PING
		bad    bool
	}{
		{desc: "a DATA frame before each PING", server: data.Bytes()},
		{desc: "a SETTINGS ack before each PING", server: ack.Bytes(), bad: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newConn(nil, Config{})
				g.in.skip = 0
				var v *Violation
				for i := 0; i < 3000 && v == nil; i++ {
					g.out.advance(tc.server)
					g.noteAnswer()
					_, v = g.in.scan(ping)
				}
				if (v != nil) != tc.bad {
					t.Errorf("3000 PINGs in a second: violation %v, want one: %v", v, tc.bad)
				}
			})
		})
	}
}
