package http1

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// echoHandler answers with the method, protocol, body and trailer it read.
func echoHandler(calls *atomic.Int64) httpmsg.Handler {
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		calls.Add(1)
		var b []byte
		var err error
		if r.Body != nil {
			b, err = io.ReadAll(r.Body)
		}
		if err != nil {
			reply(w, http.StatusBadRequest, err.Error())
			return
		}
		var tr string
		if r.Trailer != nil {
			tr = r.Trailer().Get("T")
		}
		reply(w, http.StatusOK, fmt.Sprintf("%s %s %q t=%q", r.Method, proto(r), b, tr))
	})
}

func TestFramingRefused(t *testing.T) {
	t.Parallel()
	const post = "POST / HTTP/1.1\r\nHost: a\r\n"
	const te = post + "Transfer-Encoding: chunked\r\n\r\n"
	tests := []struct {
		desc   string
		raw    string
		inBody bool // found while the handler reads the body
	}{
		{desc: "both content-length and transfer-encoding", raw: post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{desc: "empty content-length", raw: post + "Content-Length:\r\n\r\n"},
		{desc: "signed content-length", raw: post + "Content-Length: +5\r\n\r\nhello"},
		{desc: "non-numeric content-length", raw: post + "Content-Length: 5x\r\n\r\nhello"},
		{desc: "content-length list", raw: post + "Content-Length: 5, 5\r\n\r\nhello"},
		{desc: "differing content-lengths", raw: post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
		{desc: "transfer-encoding not chunked", raw: post + "Transfer-Encoding: gzip\r\n\r\n"},
		{desc: "transfer-encoding list", raw: post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
		{desc: "transfer-encoding twice", raw: post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{desc: "transfer-encoding on http/1.0", raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello"},
		{desc: "transfer-encoding alone on http/1.0", raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{desc: "obs-fold", raw: post + "X-A: b\r\n c\r\n\r\n"},
		{desc: "obs-fold on first field", raw: "GET / HTTP/1.1\r\n Host: a\r\n\r\n"},
		{desc: "space before colon", raw: post + "Content-Length : 5\r\n\r\nhello"},
		{desc: "tab before colon", raw: post + "Transfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n"},
		{desc: "nul in field value", raw: post + "X-A: b\x00c\r\n\r\n"},
		{desc: "nul in request line", raw: "GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "bare cr in field", raw: post + "X-A: b\rc\r\n\r\n"},
		{desc: "bare cr in request line", raw: "GET / HTTP/1.1\r Host: a\r\n\r\n"},
		{desc: "chunk size not hex", raw: te + "g\r\nhello\r\n0\r\n\r\n", inBody: true},
		{desc: "chunk size line bare lf", raw: te + "5\nhello\r\n0\r\n\r\n", inBody: true},
		{desc: "chunk size trailing space", raw: te + "5 \r\nhello\r\n0\r\n\r\n", inBody: true},
		{desc: "chunk size overflow", raw: te + "10000000000000000\r\nhello\r\n0\r\n\r\n", inBody: true},
		{desc: "chunk data without crlf", raw: te + "5\r\nhelloXX0\r\n\r\n", inBody: true},
		{desc: "chunk data bare lf", raw: te + "5\r\nhello\n0\r\n\r\n", inBody: true},
		{desc: "trailer bare lf", raw: te + "0\r\nT: v\n\r\n", inBody: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			ts := start(t, Config{}, echoHandler(&calls))
			out, closed := roundTrip(t, ts, tt.raw)
			res := readResponses(t, out)
			if !closed || len(res) != 1 || res[0].StatusCode != http.StatusBadRequest || !res[0].Close {
				t.Fatalf("got closed=%v %q", closed, out)
			}
			if n := calls.Load(); !tt.inBody && n != 0 {
				t.Fatalf("handler called %d times", n)
			}
		})
	}
}

func TestFramingAccepted(t *testing.T) {
	t.Parallel()
	const host = "Host: a\r\n"
	tests := []struct {
		desc string
		raw  string
		want []string // response bodies, in order
	}{
		{
			desc: "pipelined keep-alive with content-length and chunked bodies",
			raw: "POST /1 HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello" +
				"POST /2 HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" +
				"GET /3 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
			want: []string{`POST HTTP/1.1 "hello" t=""`, `POST HTTP/1.1 "abcde" t=""`, `GET HTTP/1.1 "" t=""`},
		},
		{
			desc: "trailers",
			raw:  "POST / HTTP/1.1\r\n" + host + "Trailer: T\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\nT: v\r\n\r\n",
			want: []string{`POST HTTP/1.1 "x" t="v"`},
		},
		{
			desc: "http/1.0 keep-alive",
			raw: "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi" +
				"GET / HTTP/1.0\r\n\r\n",
			want: []string{`POST HTTP/1.0 "hi" t=""`, `GET HTTP/1.0 "" t=""`},
		},
		{
			desc: "crlf after a post body",
			raw: "POST / HTTP/1.1\r\n" + host + "Content-Length: 1\r\n\r\nx\r\n" +
				"GET / HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
			want: []string{`POST HTTP/1.1 "x" t=""`, `GET HTTP/1.1 "" t=""`},
		},
		{
			desc: "same content-length twice and lf-only head",
			raw:  "POST / HTTP/1.1\n" + "Host: a\nContent-Length: 2\nContent-Length: 2\nConnection: close\n\nok",
			want: []string{`POST HTTP/1.1 "ok" t=""`},
		},
		{
			desc: "unread bodies drained between pipelined requests",
			raw: "POST /skip HTTP/1.1\r\n" + host + "Content-Length: 3\r\n\r\nabc" +
				"POST /skip HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n" +
				"GET / HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
			want: []string{`skipped`, `skipped`, `GET HTTP/1.1 "" t=""`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			echo := echoHandler(&calls)
			ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				if r.Path() == "/skip" {
					reply(w, http.StatusOK, "skipped")
					return
				}
				echo.ServeProxy(w, r)
			}))
			out, closed := roundTrip(t, ts, tt.raw)
			res := readResponses(t, out)
			if !closed || len(res) != len(tt.want) {
				t.Fatalf("closed=%v, %d responses: %q", closed, len(res), out)
			}
			for i, r := range res {
				if got := bodyOf(r); r.StatusCode != http.StatusOK || got != tt.want[i] {
					t.Errorf("response %d: %d %q, want %q", i, r.StatusCode, got, tt.want[i])
				}
			}
		})
	}
}

// TestRefusedAfterAccepted checks that a refused request in a pipeline
// still lets the requests before it through, and nothing after it.
func TestRefusedAfterAccepted(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts := start(t, Config{}, echoHandler(&calls))
	raw := "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /smuggle HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
		"GET /hidden HTTP/1.1\r\nHost: a\r\n\r\n"
	out, closed := roundTrip(t, ts, raw)
	res := readResponses(t, out)
	if !closed || len(res) != 2 || res[0].StatusCode != 200 || res[1].StatusCode != 400 {
		t.Fatalf("closed=%v %q", closed, out)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

// TestBadChunkMidBody checks a bad chunk the handler meets while streaming:
// its body read fails, and the connection closes with nothing after the
// bad chunk parsed as a request.
func TestBadChunkMidBody(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	readErr := make(chan error, 1)
	var calls atomic.Int64
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		if calls.Add(1) > 1 {
			return
		}
		close(started)
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}))
	c := dial(t, ts)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
	<-started
	io.WriteString(c, "5\r\nhello\r\n3 \r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	if err := <-readErr; err == nil {
		t.Fatal("body read succeeded")
	}
	out, err := io.ReadAll(c)
	if err != nil || len(readResponses(t, string(out))) > 1 || calls.Load() != 1 {
		t.Fatalf("got %q, %v; %d handler calls", out, err, calls.Load())
	}
}
