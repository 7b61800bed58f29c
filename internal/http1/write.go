package http1

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// Errors of the writers: what they were asked to write would not be one
// well-formed line.
var (
	ErrBadMethod = errors.New("http1: invalid method")
	ErrBadTarget = errors.New("http1: invalid request target")
	ErrBadHost   = errors.New("http1: invalid Host")
	ErrBadField  = errors.New("http1: invalid header field")
	ErrBadLength = errors.New("http1: invalid content length")
)

// statusLines holds "HTTP/1.1 NNN Reason\r\n" for every code 100 to 999,
// built once; codes net/http has no text for get an empty reason.
var statusLines [1000]string

func init() {
	for code := 100; code < len(statusLines); code++ {
		statusLines[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n"
	}
}

// AppendStatusLine appends "HTTP/1.1 NNN Reason\r\n" from a table built
// once; status must be 100 to 999.
func AppendStatusLine(b []byte, status int) []byte {
	return append(b, statusLines[status]...)
}

// AppendRequestHead appends an HTTP/1.1 request head for an upstream
// server: request line, Host, h's fields, framing, empty line. An empty
// method is GET. contentLength is the body length, -1 for a chunked body;
// a bodiless request other than GET and HEAD gets Content-Length: 0, as
// many servers expect one (net/http does the same). h's Host,
// Content-Length and Transfer-Encoding fields are skipped (the framing is
// written here), Trailer too unless the body is chunked, and an empty
// User-Agent (httputil.ReverseProxy's way to send none). The target must
// be origin-form, "*" for OPTIONS or authority-form for CONNECT, in
// visible ASCII. Every name and value is checked, so that nothing can
// smuggle a line break upstream. On error b is returned unchanged.
func AppendRequestHead(b []byte, method, target, host string, h httpmsg.Header, contentLength int64) ([]byte, error) {
	if method == "" {
		method = "GET"
	}
	switch {
	case !httpsyntax.ValidToken(method):
		return b, ErrBadMethod
	case !validOutTarget(method, target):
		return b, ErrBadTarget
	case !validHost(host):
		return b, ErrBadHost
	case contentLength < -1:
		return b, ErrBadLength
	}
	start := len(b)
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	b, err := appendFields(b, h, contentLength != -1)
	if err != nil {
		return b[:start], err
	}
	switch {
	case contentLength == -1:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case contentLength > 0 || (method != "GET" && method != "HEAD"):
		b = appendLength(b, contentLength)
	}
	return append(b, "\r\n"...), nil
}

// validOutTarget applies the upstream client's target rules.
func validOutTarget(method, t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !targetTab[t[i]] {
			return false
		}
	}
	switch {
	case t[0] == '/':
		return true
	case t == "*":
		return method == "OPTIONS"
	}
	return method == "CONNECT" && ValidAuthority(t)
}

// appendFields appends h's fields but those the writer frames itself;
// noTrailer also drops Trailer.
func appendFields(b []byte, h httpmsg.Header, noTrailer bool) ([]byte, error) {
	for _, f := range h {
		switch k := kindOf(f.Name); {
		case k == fHost || k == fContentLength || k == fTransferEncoding:
			continue
		case noTrailer && foldEq(f.Name, "trailer"):
			continue
		case f.Value == "" && foldEq(f.Name, "user-agent"):
			continue
		}
		if !httpsyntax.ValidToken(f.Name) || !httpsyntax.ValidFieldValue(f.Value) {
			return b, ErrBadField
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	return b, nil
}

func appendLength(b []byte, n int64) []byte {
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "\r\n"...)
}

// AppendChunkHeader appends the size line of an n-byte chunk ("%x\r\n");
// the caller appends the data and "\r\n". n must be positive: a zero
// size is the last chunk, AppendLastChunk.
func AppendChunkHeader(b []byte, n int) []byte {
	b = strconv.AppendUint(b, uint64(n), 16)
	return append(b, "\r\n"...)
}

// AppendLastChunk appends the last chunk, the trailer fields and the
// final CRLF, checking every name and value. Framing fields (Host,
// Content-Length, Transfer-Encoding, Trailer) in trailer are skipped:
// RFC 9110 §6.5.1 forbids them there. On error b is returned unchanged.
func AppendLastChunk(b []byte, trailer httpmsg.Header) ([]byte, error) {
	start := len(b)
	b = append(b, "0\r\n"...)
	b, err := appendFields(b, trailer, true)
	if err != nil {
		return b[:start], err
	}
	return append(b, "\r\n"...), nil
}
