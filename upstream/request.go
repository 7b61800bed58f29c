package upstream

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// writeHead buffers the request line and headers. The body is framed by
// Content-Length when its length is known and chunked otherwise (with a
// Trailer field naming req.Trailer's keys). Every name and value is
// checked, so that a header cannot smuggle a line break upstream.
func writeHead(w *bufio.Writer, req *http.Request, hasBody bool) error {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	if !httpsyntax.ValidToken(method) {
		return errBadMethod
	}
	w.WriteString(method)
	w.WriteByte(' ')
	if err := writeTarget(w, req, method); err != nil {
		return err
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validHost(host) {
		return errBadHost
	}
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if err := writeHeader(w, req.Header, true); err != nil {
		return err
	}
	if req.Close && req.Header["Connection"] == nil {
		w.WriteString("Connection: close\r\n")
	}
	writeFraming(w, req, method, hasBody)
	_, err := w.WriteString("\r\n")
	return err
}

func writeFraming(w *bufio.Writer, req *http.Request, method string, hasBody bool) {
	switch {
	case !hasBody:
		// Many servers expect a length for these methods (as net/http).
		if method != "GET" && method != "HEAD" {
			w.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), req.ContentLength, 10))
		w.WriteString("\r\n")
	default:
		w.WriteString("Transfer-Encoding: chunked\r\n")
		if len(req.Trailer) > 0 {
			keys := make([]string, 0, len(req.Trailer))
			for k := range req.Trailer {
				if httpsyntax.ValidToken(k) {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			w.WriteString("Trailer: ")
			for i, k := range keys {
				if i > 0 {
					w.WriteString(", ")
				}
				w.WriteString(k)
			}
			w.WriteString("\r\n")
		}
	}
}

// writeTarget writes the request target without building it as a string.
func writeTarget(w *bufio.Writer, req *http.Request, method string) error {
	u := req.URL
	if u.Opaque != "" && method != "CONNECT" {
		return errBadURI // only CONNECT's authority-form is opaque here
	}
	if u.Opaque != "" || (method == "CONNECT" && u.Path == "") {
		t := u.RequestURI()
		if method == "CONNECT" && u.Opaque == "" {
			t = u.Host
		}
		if !validTarget(t) {
			return errBadURI
		}
		w.WriteString(t)
		return nil
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	// origin-form is an absolute path; "*" only for OPTIONS (RFC 9112 §3.2).
	if (p[0] != '/' && (p != "*" || method != "OPTIONS")) || !validTarget(p) || !validTarget(u.RawQuery) {
		return errBadURI
	}
	w.WriteString(p)
	if u.ForceQuery || u.RawQuery != "" {
		w.WriteByte('?')
		w.WriteString(u.RawQuery)
	}
	return nil
}

// excluded are the fields writeHead frames itself.
func excluded(k string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// writeHeader writes h's fields; with head set it skips the fields that
// framing owns and an empty User-Agent (ReverseProxy's way to send none).
func writeHeader(w *bufio.Writer, h http.Header, head bool) error {
	for k, vv := range h {
		if head && (excluded(k) || (k == "User-Agent" && len(vv) > 0 && vv[0] == "")) {
			continue
		}
		if !httpsyntax.ValidToken(k) {
			return errBadHeader
		}
		for _, v := range vv {
			if !httpsyntax.ValidFieldValue(v) {
				return errBadHeader
			}
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	return nil
}

// bodyReadError is a failure to read the request body (as opposed to a
// failure to send it).
type bodyReadError struct{ err error }

func (e bodyReadError) Error() string { return e.err.Error() }

const bodyBufSize = 32 << 10

var bodyBufs = sync.Pool{New: func() any { return new([bodyBufSize]byte) }}

// writeBody streams the request body after the buffered head, flushing
// after every read so that a streamed upload is never held back. It runs
// on its own goroutine while the caller waits for the response.
func (c *conn) writeBody(req *http.Request, w *bufio.Writer) {
	buf := bodyBufs.Get().(*[bodyBufSize]byte)
	var err error
	if req.ContentLength > 0 {
		err = copyFixed(w, req.Body, req.ContentLength, buf[:])
	} else {
		err = copyChunked(w, req, buf[:])
	}
	bodyBufs.Put(buf)
	req.Body.Close()
	var rerr bodyReadError
	isRead := errors.As(err, &rerr)
	c.mu.Lock()
	if isRead {
		c.bodyErr = rerr.err
	} else if err == nil && !c.headDone {
		c.armTimeout()
	}
	c.mu.Unlock()
	if isRead {
		c.nc.Close() // the request cannot be completed
	}
	c.wdone <- err
}

func copyFixed(w *bufio.Writer, r io.Reader, n int64, buf []byte) error {
	for n > 0 {
		m, err := r.Read(buf[:min(int64(len(buf)), n)])
		if m > 0 {
			n -= int64(m)
			if _, err := w.Write(buf[:m]); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		switch {
		case err == io.EOF && n > 0:
			return bodyReadError{errBodyShort}
		case err == io.EOF:
			return nil
		case err != nil:
			return bodyReadError{err}
		}
	}
	return nil
}

// chunkRoom is the space kept before the data for the chunk size line.
const chunkRoom = 8

func copyChunked(w *bufio.Writer, req *http.Request, buf []byte) error {
	for {
		m, err := req.Body.Read(buf[chunkRoom : len(buf)-2])
		if m > 0 {
			start := putChunkSize(buf[:chunkRoom], m)
			buf[chunkRoom+m], buf[chunkRoom+m+1] = '\r', '\n'
			if _, err := w.Write(buf[start : chunkRoom+m+2]); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return bodyReadError{err}
		}
	}
	w.WriteString("0\r\n")
	if err := writeHeader(w, req.Trailer, false); err != nil {
		return bodyReadError{err}
	}
	w.WriteString("\r\n")
	return w.Flush()
}

// putChunkSize writes "<hex size>\r\n" right-aligned in b and returns
// where it starts.
func putChunkSize(b []byte, n int) int {
	i := len(b) - 2
	b[i], b[i+1] = '\r', '\n'
	for {
		i--
		b[i] = "0123456789abcdef"[n&15]
		n >>= 4
		if n == 0 {
			return i
		}
	}
}
