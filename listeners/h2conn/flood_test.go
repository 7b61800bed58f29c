package h2conn

import (
	"bufio"
	"testing"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// TestFloodsEndConnection sends each flood the guard's tests do not
// cover from one connection: the connection gets GOAWAY
// ENHANCE_YOUR_CALM, then is closed, and the flood is reported.
func TestFloodsEndConnection(t *testing.T) {
	tests := []struct {
		desc  string
		flood func(fr *http2.Framer, i int) error
	}{
		{desc: "PRIORITY flood", flood: func(fr *http2.Framer, i int) error {
			return fr.WritePriority(uint32(2*i+1), http2.PriorityParam{StreamDep: 0, Weight: 1})
		}},
		{desc: "tiny WINDOW_UPDATE flood", flood: func(fr *http2.Framer, i int) error { return fr.WriteWindowUpdate(0, 1) }},
		{desc: "empty DATA flood", flood: func(fr *http2.Framer, i int) error { return fr.WriteData(1, false, nil) }},
		{desc: "unknown frame flood", flood: func(fr *http2.Framer, i int) error { return fr.WriteRawFrame(0xf0, 0, 0, nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, Config{MaxControlPerSecond: 50, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				<-r.Context().Done() // stream 1 stays open for the DATA flood
			})})
			rc := dialRaw(t, ts.addr)
			rc.get(1, "/", false)
			bw := bufio.NewWriter(rc.c)
			fr := http2.NewFramer(bw, nil)
			rc.wmu.Lock()
			for i := 0; i < 200; i++ {
				if err := tc.flood(fr, i); err != nil {
					t.Fatal(err)
				}
			}
			err := bw.Flush()
			rc.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			var ga *http2.GoAwayFrame
			for {
				f := rc.next()
				if f == nil {
					break
				}
				if g, ok := f.(*http2.GoAwayFrame); ok {
					ga = g
				}
			}
			if ga == nil || ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM before the close", ga)
			}
			found := false
			for _, r := range ts.refusals() {
				found = found || r.Reason == httpmsg.ReasonControlFrameFlood
			}
			if !found {
				t.Errorf("refusals %v, want control_frame_flood", ts.refusals())
			}
		})
	}
}

// TestTooManyStreams: a stream past MaxConcurrentStreams is refused
// (REFUSED_STREAM, which a client may retry) and reported; the streams
// within the limit are served.
func TestTooManyStreams(t *testing.T) {
	release := make(chan struct{})
	ts := startServer(t, Config{MaxConcurrentStreams: 2, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		<-release
		w.WriteHead(204, nil, 0)
	})})
	rc := dialRaw(t, ts.addr)
	for id := uint32(1); id <= 5; id += 2 {
		rc.get(id, "/", true)
	}
	f := rc.next()
	if r, ok := f.(*http2.RSTStreamFrame); !ok || r.StreamID != 5 || r.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("got %v, want RST_STREAM REFUSED_STREAM on stream 5", f)
	}
	close(release)
	done := map[uint32]bool{}
	for len(done) < 2 {
		switch f := rc.next().(type) {
		case *http2.MetaHeadersFrame:
			if f.PseudoValue("status") != "204" {
				t.Errorf("stream %d: status %s, want 204", f.StreamID, f.PseudoValue("status"))
			}
			done[f.StreamID] = true
		case nil, *http2.GoAwayFrame, *http2.RSTStreamFrame:
			t.Fatalf("got %v; answered so far %v", f, done)
		}
	}
	if rs := ts.refusals(); len(rs) != 1 || rs[0].Reason != httpmsg.ReasonTooManyStreams {
		t.Errorf("refusals %v, want one too_many_streams", rs)
	}
}

// TestPingEarnedByAnswers: a tiny WINDOW_UPDATE and a PING sent after
// each answer (gRPC's BDP estimation: both once per round trip while
// data arrives) are not counted against MaxControlPerSecond, however
// many there are; PINGs with no answer between them are a flood.
func TestPingEarnedByAnswers(t *testing.T) {
	// Answered as gRPC answers: a head, a small message, trailers.
	ts := startServer(t, Config{MaxControlPerSecond: 10, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		w.WriteHead(200, nil, -1)
		w.Write([]byte("ok"))
		w.WriteTrailer(httpmsg.Header{{Name: "grpc-status", Value: "0"}})
	})})
	rc := dialRaw(t, ts.addr)
	for i := uint32(0); i < 40; i++ {
		id := 2*i + 1
		rc.get(id, "/", true)
		for answered := false; !answered; {
			switch f := rc.next().(type) {
			case *http2.DataFrame:
				answered = f.StreamID == id && f.StreamEnded()
			case *http2.MetaHeadersFrame:
				answered = f.StreamID == id && f.StreamEnded()
			case nil, *http2.GoAwayFrame, *http2.RSTStreamFrame:
				t.Fatalf("answer %d: got %v, want the answer", i, f)
			}
		}
		// As grpc-go does before each BDP PING: a WINDOW_UPDATE of what
		// it took, a few bytes.
		rc.write(func() error { return rc.fr.WriteWindowUpdate(0, 2) })
		rc.write(func() error { return rc.fr.WritePing(false, [8]byte{byte(i)}) })
	}
	rc.get(81, "/", true)
	for answered := false; !answered; {
		switch f := rc.next().(type) {
		case *http2.MetaHeadersFrame:
			answered = f.StreamID == 81
		case nil, *http2.GoAwayFrame, *http2.RSTStreamFrame:
			t.Fatalf("after 40 earned PINGs: got %v, want the connection to serve", f)
		}
	}
	for i := range 40 {
		rc.write(func() error { return rc.fr.WritePing(false, [8]byte{byte(i)}) })
	}
	for {
		f := rc.next()
		if f == nil {
			t.Fatal("the connection closed without GOAWAY after 40 unearned PINGs")
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			if ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", ga.ErrCode)
			}
			return
		}
	}
}

// TestTinyWindowUpdatesEarnNothing: a client that opens its stream window
// a byte at a time gets 1-byte DATA frames, which earn no control frame:
// its WINDOW_UPDATEs are counted, and past MaxControlPerSecond the
// connection ends with ENHANCE_YOUR_CALM.
func TestTinyWindowUpdatesEarnNothing(t *testing.T) {
	body := make([]byte, 64<<10)
	ts := startServer(t, Config{MaxControlPerSecond: 10, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		w.WriteHead(200, nil, int64(len(body)))
		w.Write(body)
	})})
	rc := dialRaw(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
	rc.get(1, "/", true)
	for i := 0; i < 200; i++ {
		switch f := rc.next().(type) {
		case *http2.DataFrame:
			if len(f.Data()) > 1 {
				t.Fatalf("a DATA frame of %d bytes in a 1-byte window", len(f.Data()))
			}
			rc.write(func() error { return rc.fr.WriteWindowUpdate(1, 1) })
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", f.ErrCode)
			}
			return
		case nil:
			t.Fatal("the connection closed without GOAWAY")
		}
	}
	t.Fatal("200 one-byte WINDOW_UPDATEs, each paid by the 1-byte frame it caused, and no GOAWAY")
}
