package h3

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/quic-go/quic-go"
)

// Transport is an HTTP/3 client (http.RoundTripper) with one QUIC
// connection per host:port, for tests and the load generator. It speaks
// the same QPACK subset as the server (static table only).
type Transport struct {
	// TLS is the client's TLS config (RootCAs, ServerName); NextProtos
	// is set to ["h3"].
	TLS *tls.Config
	// QUIC is the connection config; nil: quic-go's defaults.
	QUIC *quic.Config
	// LocalAddr, when set, is the UDP address connections are made from.
	LocalAddr *net.UDPAddr

	mu    sync.Mutex
	conns map[string]*clientConn
}

type clientConn struct {
	conn   *quic.Conn
	tr     *quic.Transport
	mu     sync.Mutex
	goAway bool
}

// ErrGoAway is returned for a request the server refused because it is
// closing the connection (GOAWAY or H3_REQUEST_REJECTED): it was not
// processed and may be retried on a new connection.
var ErrGoAway = errors.New("h3: connection going away; request not processed")

// RoundTrip sends one request and returns its response; the body reads
// the stream.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	cc, err := t.conn(req.Context(), req.URL.Host)
	if err != nil {
		return nil, err
	}
	st, err := cc.conn.OpenStreamSync(req.Context())
	if err != nil {
		t.drop(req.URL.Host, cc)
		return nil, fmt.Errorf("h3: opening a stream: %w", err)
	}
	if err := writeRequest(st, req); err != nil {
		return nil, err
	}
	resp, err := readResponse(st, req)
	if err != nil {
		var se *quic.StreamError
		if errors.As(err, &se) && ErrCode(se.ErrorCode) == ErrRequestRejected {
			return nil, ErrGoAway
		}
		return nil, err
	}
	return resp, nil
}

// Dial opens a new connection to addr, not shared with other requests.
func (t *Transport) Dial(ctx context.Context, addr string) (*quic.Conn, error) {
	cc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return cc.conn, nil
}

func (t *Transport) conn(ctx context.Context, addr string) (*clientConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cc := t.conns[addr]; cc != nil && cc.usable() {
		return cc, nil
	}
	cc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if t.conns == nil {
		t.conns = map[string]*clientConn{}
	}
	t.conns[addr] = cc
	return cc, nil
}

func (cc *clientConn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return !cc.goAway && cc.conn.Context().Err() == nil
}

func (t *Transport) drop(addr string, cc *clientConn) {
	t.mu.Lock()
	if t.conns[addr] == cc {
		delete(t.conns, addr)
	}
	t.mu.Unlock()
}

func (t *Transport) dial(ctx context.Context, addr string) (*clientConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("h3: %w", err)
	}
	local := t.LocalAddr
	if local == nil {
		local = &net.UDPAddr{}
		if ua.IP.To4() != nil {
			local.IP = net.IPv4zero
		}
	}
	pc, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, fmt.Errorf("h3: %w", err)
	}
	tr := &quic.Transport{Conn: pc}
	tc := &tls.Config{}
	if t.TLS != nil {
		tc = t.TLS.Clone()
	}
	tc.NextProtos = []string{"h3"}
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	c, err := tr.Dial(ctx, ua, tc, t.QUIC)
	if err != nil {
		tr.Close()
		return nil, fmt.Errorf("h3: dialing %s: %w", addr, err)
	}
	if _, err := openControl(c, 64<<10); err != nil {
		c.CloseWithError(0, "")
		tr.Close()
		return nil, err
	}
	cc := &clientConn{conn: c, tr: tr}
	go readPeerStreams(c, func(uint64) {
		cc.mu.Lock()
		cc.goAway = true
		cc.mu.Unlock()
	})
	context.AfterFunc(c.Context(), func() { tr.Close() })
	return cc, nil
}

// Close closes every connection.
func (t *Transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, cc := range t.conns {
		cc.conn.CloseWithError(quic.ApplicationErrorCode(ErrNoError), "")
		cc.tr.Close()
		delete(t.conns, k)
	}
	return nil
}

func writeRequest(st *quic.Stream, req *http.Request) error {
	path := req.URL.RequestURI()
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	fields := []Field{{":method", req.Method}, {":scheme", "https"}, {":authority", host}, {":path", path}}
	for k, vv := range req.Header {
		if k == "Host" {
			continue
		}
		for _, v := range vv {
			fields = append(fields, Field{lowerName(k), v})
		}
	}
	if req.ContentLength > 0 {
		fields = append(fields, Field{"content-length", strconv.FormatInt(req.ContentLength, 10)})
	}
	hs := appendFieldSection(nil, fields)
	b := appendFrameHeader(nil, frameHeaders, uint64(len(hs)))
	b = append(b, hs...)
	if req.Body == nil || req.Body == http.NoBody {
		if _, err := st.Write(b); err != nil {
			return err
		}
		return st.Close()
	}
	if _, err := st.Write(b); err != nil {
		return err
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := req.Body.Read(buf)
			if n > 0 {
				f := appendFrameHeader(nil, frameData, uint64(n))
				if _, werr := st.Write(append(f, buf[:n]...)); werr != nil {
					return
				}
			}
			if err == io.EOF {
				st.Close()
				return
			}
			if err != nil {
				st.CancelWrite(quic.StreamErrorCode(ErrRequestCancelled))
				return
			}
		}
	}()
	return nil
}

func readResponse(st *quic.Stream, req *http.Request) (*http.Response, error) {
	fr := &frameReader{r: bufio.NewReaderSize(st, 16<<10)}
	for {
		typ, n, err := fr.next()
		if err != nil {
			return nil, fmt.Errorf("h3: reading the response: %w", err)
		}
		if typ != frameHeaders {
			return nil, protoErr(ErrFrameUnexpected, "response must open with HEADERS")
		}
		p, err := fr.payload(n, 1<<20, protoErr(ErrExcessiveLoad, "response header section too large"))
		if err != nil {
			return nil, err
		}
		resp := &http.Response{Proto: "HTTP/3.0", ProtoMajor: 3, Header: http.Header{}, Request: req}
		err = decodeFieldSection(p, 1<<20, func(f Field) error {
			if f.Name == ":status" {
				resp.StatusCode, err = strconv.Atoi(f.Value)
				return err
			}
			resp.Header.Add(f.Name, f.Value)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
		cl, _ := parseContentLength(resp.Header["Content-Length"])
		resp.ContentLength = cl
		resp.Trailer = http.Header{}
		b := &body{fr: fr, declared: cl, trailer: resp.Trailer, limit: 1 << 20}
		if req.Method == http.MethodHead {
			b.declared = -1
		}
		b.onClose = func() { st.CancelRead(quic.StreamErrorCode(ErrRequestCancelled)) }
		resp.Body = b
		return resp, nil
	}
}
