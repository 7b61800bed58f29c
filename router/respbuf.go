package router

import (
	"errors"
	"io"
	"sync"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// Response buffering (conf.Route.StreamResponseBody, conf.Buffers).
//
// A response body is read from the server as fast as the server sends it,
// so that the server's connection goes back to its pool (or closes) as
// soon as the answer ended, however slowly the client takes it (nginx's
// `proxy_buffering on`). The handler's goroutine writes to the client, as
// for any response; once an answer does not end within its first read, a
// second goroutine (fillResponse) reads the server into the exchange's
// bodybuf.Queue: memory chunks up to the buffers' response_memory, then an
// unlinked temporary file, at most response_max bytes not yet taken by
// the client. The handler takes from the front of the queue and writes to
// the client. Bytes are never held back: while the client keeps up the
// queue is empty and every read goes out at once (the writer is flushed
// whenever the handler has caught up), and the queue holds only what the
// client has not taken yet. Past response_max, or when neither the memory
// cap nor the disk cap leaves room, the reader waits for the client: the
// rest streams, and edgeway_response_buffer_overflow_total counts it.
//
// Cost: a response that ends within the first read (every small answer
// with a length) takes no queue and no goroutine: the path is copyBody's.
// A longer one takes a goroutine (with a 32 KiB buffer while it reads
// the server), two channels and the chunks it holds; its writer gives
// its 32 KiB copy buffer back after the first read and writes the file's
// bytes through a 4 KiB one (a slow reader waits in a write holding it).
//
// Never buffered: text/event-stream, gRPC (application/grpc...),
// answers that carry `X-Accel-Buffering: no` (the field is removed, as
// nginx does, whatever the route says), tunnels (101), bodyless answers,
// and routes with `response_buffering off`. A response with trailers is
// buffered, but its connection is given back only once the trailers went
// out (their strings live in the connection's buffer).

// respBuffering is a route's response buffering, resolved at load.
type respBuffering struct {
	on       bool
	mem, max int64 // bytes held in memory, and in all, not yet taken by the client
}

// compileRespBuffering resolves a route's response buffering from the
// route and the buffers block.
func compileRespBuffering(rc conf.Route, b conf.Buffers) respBuffering {
	if rc.StreamResponseBody || b.ResponseMax == conf.NoResponseMax {
		return respBuffering{}
	}
	rb := respBuffering{on: true, mem: b.ResponseMemory, max: b.ResponseMax}
	if rb.mem == 0 {
		rb.mem = conf.DefaultBufferResponseMemory
	}
	if rb.max == 0 {
		rb.max = conf.DefaultBufferResponseMax
	}
	return rb
}

// buffersResponse reports whether the response body is read ahead of the
// client, and removes X-Accel-Buffering from the head sent to the client.
func (x *exchange) buffersResponse(h httpmsg.Header) bool {
	accel := h.Get("X-Accel-Buffering")
	if accel != "" {
		x.respHdr = x.respHdr.Del("X-Accel-Buffering")
	}
	return x.rt.respBuf.on && !httpmsg.EqualFold(accel, "no") && !isEventStream(h) && !isGRPC(h)
}

// closedBody stands for a response body the reader already closed (its
// connection is pooled and may carry another exchange).
type closedBody struct{}

func (closedBody) Read([]byte) (int, error) { return 0, io.EOF }
func (closedBody) Close() error             { return nil }

// errResponseReader is the end of a response body whose reader panicked.
var errResponseReader = errors.New("response body reader failed")

// copyBuffered copies the response body to the client as copyBody does,
// reading ahead of the client into x.rq once the body outlasts its first
// read. Its errors are copyBody's.
func (x *exchange) copyBuffered(body io.ReadCloser, stream bool, dst io.Writer, enc encoder) error {
	buf := buffers.Get()
	// Lifetime: buf is read into and written from here only, and is
	// handed back once its first read went out; the queue's views are
	// written before Done hands their chunk back.
	n, rerr := body.Read(buf)
	if n > 0 {
		x.wd.touch()
	}
	if rerr != nil { // the whole answer in one read (or a failure): no queue
		defer buffers.Put(buf)
		if err := x.writeOut(buf[:n], stream, dst, enc); err != nil {
			return err
		}
		if rerr == io.EOF {
			return nil
		}
		return rerr
	}
	rb := x.rt.respBuf
	x.rq.Start(x.r.bufs, rb.mem, rb.max)
	done := make(chan struct{})
	var closed bool // written by the reader before done is closed
	defer x.endBuffered(done, &closed)
	g := x.wd.gen()
	panics.Go("response body reader", func() { x.fillResponse(body, g, done, &closed) })
	err := x.writeOut(buf[:n], stream, dst, enc)
	buffers.Put(buf)
	if err != nil {
		return err
	}
	// What the queue holds in memory is written from its chunks; bytes
	// from its file go through a small scratch buffer. The client that
	// makes the queue spill is a slow one, whose writer waits in a
	// write for a long time: it holds 4 KiB there, not 32.
	scratch := scratchBufs.Get().(*[scratchSize]byte)
	defer scratchBufs.Put(scratch)
	return x.writeBuffered(scratch[:], stream, dst, enc)
}

// scratchBufs lends the buffers a queue's file bytes are read into.
const scratchSize = 4 << 10

var scratchBufs = sync.Pool{New: func() any { return new([scratchSize]byte) }}

// endBuffered ends a buffered copy, also when the writer panicked: a
// reader still running is stopped (its read of the server interrupted)
// and waited for before the queue is released.
func (x *exchange) endBuffered(done <-chan struct{}, closed *bool) {
	if x.rq.Stop() {
		x.cancel.Cancel(errClientWrite) // ends a read of the server in progress
	}
	<-done
	if *closed {
		x.resp.Body, x.resp.Trailer = closedBody{}, nil
	}
	x.rq.Release()
}

// writeOut writes p to dst, flushed at once when the body is a stream.
func (x *exchange) writeOut(p []byte, stream bool, dst io.Writer, enc encoder) error {
	if len(p) == 0 {
		return nil
	}
	if _, err := dst.Write(p); err != nil {
		return errClientWrite
	}
	if stream {
		if enc != nil && enc.Flush() != nil {
			return errClientWrite
		}
		if err := x.w.w.Flush(); err != nil {
			return errClientWrite
		}
	}
	return nil
}

// fillResponse reads the server's body into x.rq until it ends, then
// gives the connection back at once when no trailers must go out first;
// *closed says it closed the body. It runs on its own goroutine and
// touches only the queue, the body, the watchdog and x.resp's trailers.
func (x *exchange) fillResponse(body io.ReadCloser, g uint64, done chan<- struct{}, closed *bool) {
	defer close(done)
	end := errResponseReader
	defer func() { x.rq.Close(end) }() // Close keeps the first end given
	stage := buffers.Get()
	defer buffers.Put(stage)
	for {
		n, err := x.rq.Fill(body, stage)
		if n > 0 {
			x.wd.touch()
		}
		if err == nil {
			continue
		}
		end = err
		if err == io.EOF {
			x.wd.disarm(g, phaseDownload)
			if len(x.resp.Trailer) == 0 {
				body.Close() // read to EOF: the connection is pooled
				*closed = true
			}
		}
		return
	}
}

// writeBuffered writes what the queue gives to dst (buf: the scratch for
// its file bytes); it flushes the client's writer whenever it has caught up
// with the server, so that no byte waits for the next one.
func (x *exchange) writeBuffered(buf []byte, stream bool, dst io.Writer, enc encoder) error {
	for {
		if !x.rq.Ready() {
			if stream && enc != nil && enc.Flush() != nil {
				return errClientWrite
			}
			if err := x.w.w.Flush(); err != nil {
				return errClientWrite
			}
		}
		v, err := x.rq.Next(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := dst.Write(v); err != nil {
			return errClientWrite
		}
		x.rq.Done(len(v))
	}
}
