package listeners

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
)

// BenchmarkH2ServerGET sends GETs one after another on one h2c
// connection (prior knowledge, through the engine's preface sniff) to a
// listener whose router answers them itself (a respond route), on each
// HTTP/2 server (h2_server xnet and own). The client writes fixed frames
// and parses the answers without allocating, so allocs/op is the
// server's and the router's per request.
//
// The "16 in flight" runs send the GETs 16 at a time (one write of 16
// HEADERS frames, then the 16 answers), as h2load -m16 does: what the
// server does with streams ready together (one write for their frames).
func BenchmarkH2ServerGET(b *testing.B) {
	for _, srv := range h2Servers {
		b.Run(srv, func(b *testing.B) { benchH2ServerGET(b, srv, 1) })
		b.Run(srv+"/16_in_flight", func(b *testing.B) { benchH2ServerGET(b, srv, 16) })
	}
}

func benchH2ServerGET(b *testing.B, srv string, inFlight int) {
	cfg := testConfig()
	cfg.Name, cfg.H2Server = "web", srv
	r, err := rule.Parse(rule.HTTP, "PathPrefix(`/`)")
	if err != nil {
		b.Fatal(err)
	}
	rt := router.New(router.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer rt.Close()
	err = rt.Apply(&conf.Config{Listeners: []conf.Listener{cfg}, Routes: []conf.Route{{Name: "r", Rule: r,
		RuleText: "PathPrefix(`/`)", Priority: 1, Middlewares: []conf.Middleware{{Kind: conf.Respond, Code: 200, Arg: "ok"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Listen(cfg, rt.Proxy("web"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	bc := newBenchH2Client(c)
	bc.get(1, 1) // the settings exchange
	b.ReportAllocs()
	b.ResetTimer()
	id := uint32(3)
	for i := 0; i < b.N; i += inFlight {
		n := min(inFlight, b.N-i)
		if err := bc.get(id, n); err != nil {
			b.Fatal(err)
		}
		id += 2 * uint32(n)
	}
}

// benchH2Client is an h2c client that sends the same GET again and again
// and reads frames into fixed buffers.
type benchH2Client struct {
	c       net.Conn
	br      *bufio.Reader
	req     []byte // a HEADERS frame; its stream id is patched per request
	hdr     [9]byte
	payload []byte
	out     []byte
	owed    int // DATA bytes not yet given back to the connection window
}

func newBenchH2Client(c net.Conn) *benchH2Client {
	// :method GET, :scheme http, :path /, and :authority example.com as a
	// literal without indexing: the same bytes every time.
	block := append([]byte{0x82, 0x86, 0x84, 0x01, 11}, "example.com"...)
	req := []byte{0, 0, byte(len(block)), 0x1, 0x1 | 0x4, 0, 0, 0, 0}
	req = append(req, block...)
	bc := &benchH2Client{c: c, br: bufio.NewReaderSize(c, 32<<10), req: req, payload: make([]byte, 1<<14)}
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	return bc
}

// get sends GETs on n streams from id on, in one write, and reads until
// they all ended.
func (bc *benchH2Client) get(id uint32, n int) error {
	bc.out = bc.out[:0]
	for k := 0; k < n; k++ {
		binary.BigEndian.PutUint32(bc.req[5:], id+2*uint32(k))
		bc.out = append(bc.out, bc.req...)
	}
	if bc.owed > 1<<14 {
		bc.out = append(bc.out, 0, 0, 4, 0x8, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		binary.BigEndian.PutUint32(bc.out[len(bc.out)-4:], uint32(bc.owed))
		bc.owed = 0
	}
	if _, err := bc.c.Write(bc.out); err != nil {
		return err
	}
	last := id + 2*uint32(n-1)
	for left := n; left > 0; {
		if _, err := io.ReadFull(bc.br, bc.hdr[:]); err != nil {
			return err
		}
		size := int(bc.hdr[0])<<16 | int(bc.hdr[1])<<8 | int(bc.hdr[2])
		typ, flags, sid := bc.hdr[3], bc.hdr[4], binary.BigEndian.Uint32(bc.hdr[5:])&0x7fffffff
		if size > len(bc.payload) {
			bc.payload = make([]byte, size)
		}
		if _, err := io.ReadFull(bc.br, bc.payload[:size]); err != nil {
			return err
		}
		switch {
		case typ == 0x4 && flags&0x1 == 0: // SETTINGS: acknowledged
			if _, err := bc.c.Write([]byte{0, 0, 0, 0x4, 0x1, 0, 0, 0, 0}); err != nil {
				return err
			}
		case typ == 0x0:
			bc.owed += size
		case typ == 0x3 && sid >= id && sid <= last:
			return io.ErrUnexpectedEOF
		case typ == 0x7:
			return io.EOF
		}
		if sid >= id && sid <= last && (typ == 0x0 || typ == 0x1) && flags&0x1 != 0 {
			left--
		}
	}
	return nil
}
