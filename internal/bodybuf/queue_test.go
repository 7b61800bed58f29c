package bodybuf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// drain is a consumer: it takes the queue's bytes to the end, waiting on
// gate (when not nil) before each take, as a slow client would.
func drain(q *Queue, gate <-chan struct{}) ([]byte, error) {
	var out bytes.Buffer
	scratch := make([]byte, 7000)
	for {
		if gate != nil {
			<-gate
		}
		v, err := q.Next(scratch)
		if err != nil {
			return out.Bytes(), err
		}
		out.Write(v[:min(len(v), 5000)])
		q.Done(min(len(v), 5000))
	}
}

// produce is the producer: it fills q from body to the end.
func produce(q *Queue, body []byte) error {
	r := bytes.NewReader(body)
	stage := make([]byte, 32<<10)
	for {
		_, err := q.Fill(r, stage)
		if err != nil {
			q.Close(err)
			return err
		}
	}
}

func TestQueueCarriesABodyInOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		size    int
		lim     Limits
		mem     int64
		max     int64
		spilled bool
	}{
		{desc: "small body", size: 100},
		{desc: "memory only", size: 900 << 10},
		{desc: "past the per-body memory", size: 3<<20 + 17, mem: 256 << 10, spilled: true},
		{desc: "past the memory cap", size: 1 << 20, lim: Limits{Memory: 1}, spilled: true},
		{desc: "past max held: streams", size: 2 << 20, mem: 64 << 10, max: 200 << 10, spilled: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tc.lim.Dir = t.TempDir()
			p := NewPool(tc.lim)
			body := randomBody(tc.size)
			var q Queue
			q.Start(p, tc.mem, tc.max)
			done := make(chan error, 1)
			go func() { done <- produce(&q, body) }()
			gate := make(chan struct{})
			if tc.max > 0 {
				// The producer stops at max held while nothing is taken.
				testutil.Eventually(t, 10*time.Second, q.Full, "the producer never waited for room")
			} else {
				// A consumer that takes nothing: the producer reads it all.
				if err := <-done; err != io.EOF {
					t.Fatalf("producer: %v, want io.EOF", err)
				}
				done <- io.EOF
			}
			if ents, _ := os.ReadDir(tc.lim.Dir); len(ents) != 0 {
				t.Errorf("the temporary folder holds %d names, want none", len(ents))
			}
			close(gate)
			got, err := drain(&q, gate)
			if err != io.EOF || !bytes.Equal(got, body) {
				t.Fatalf("consumer got %d bytes, err %v; want the %d written", len(got), err, len(body))
			}
			<-done
			if s := p.Stats().Response; (s.Spills == 1) != tc.spilled || (s.Overflows == 1) != (tc.max > 0) {
				t.Errorf("stats %+v: spilled %v, capped %v wanted", s, tc.spilled, tc.max > 0)
			}
			q.Release()
			q.Release()
			if s := p.Stats(); s.Response.Memory != 0 || s.Response.Disk != 0 || s.Memory != 0 || s.Disk != 0 {
				t.Errorf("after Release: %+v, want nothing held", s)
			}
		})
	}
}

// TestQueueHoldsOnlyWhatIsNotTaken: a consumer that keeps up leaves the
// queue holding at most a chunk or two, however long the body.
func TestQueueHoldsOnlyWhatIsNotTaken(t *testing.T) {
	t.Parallel()
	p := NewPool(Limits{Dir: t.TempDir()})
	body := randomBody(8 << 20)
	var q Queue
	q.Start(p, 0, 0)
	r := bytes.NewReader(body)
	stage, scratch := make([]byte, 32<<10), make([]byte, 64<<10)
	var got []byte
	for {
		n, err := q.Fill(r, stage)
		if s := p.Stats().Response; s.Memory > 2*Chunk || s.Disk != 0 {
			t.Fatalf("holding %+v with a consumer that keeps up", s)
		}
		if err == io.EOF {
			break
		}
		for n > 0 {
			v, err := q.Next(scratch)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v...)
			q.Done(len(v))
			n -= len(v)
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes, want the %d written", len(got), len(body))
	}
	q.Release()
}

// TestQueueRewindsADrainedFile: once the consumer took everything from the
// file, new bytes go to memory again and the file is emptied.
func TestQueueRewindsADrainedFile(t *testing.T) {
	t.Parallel()
	p := NewPool(Limits{Dir: t.TempDir()})
	var q Queue
	q.Start(p, 64<<10, 0)
	first, second := randomBody(300<<10), randomBody(1000)
	stage := make([]byte, 32<<10)
	r := bytes.NewReader(first)
	for r.Len() > 0 {
		if _, err := q.Fill(r, stage); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	if s := p.Stats().Response; s.Disk == 0 || s.Spills != 1 {
		t.Fatalf("stats %+v: want a spill", s)
	}
	var got []byte
	scratch := make([]byte, 64<<10)
	for len(got) < len(first) {
		v, err := q.Next(scratch)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v...)
		q.Done(len(v))
	}
	if _, err := q.Fill(bytes.NewReader(second), stage); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats().Response; s.Disk != 0 {
		t.Errorf("after the file drained: %d bytes on disk, want 0", s.Disk)
	}
	q.Close(io.EOF)
	rest, err := drain(&q, nil)
	if err != io.EOF || !bytes.Equal(append(got, rest...), append(first, second...)) {
		t.Fatalf("read %d+%d bytes (%v), want the %d written in order", len(got), len(rest), err, len(first)+len(second))
	}
	q.Release()
	if s := p.Stats(); s.Response.Memory != 0 || s.Response.Disk != 0 {
		t.Errorf("after Release: %+v", s)
	}
}

// TestQueueStopReleasesAWaitingProducer: a consumer that gives up (its
// client went away) frees a producer waiting for room.
func TestQueueStopReleasesAWaitingProducer(t *testing.T) {
	t.Parallel()
	p := NewPool(Limits{Dir: t.TempDir()})
	var q Queue
	q.Start(p, 64<<10, 100<<10)
	done := make(chan error, 1)
	go func() { done <- produce(&q, randomBody(1<<20)) }()
	testutil.Eventually(t, 10*time.Second, q.Full, "the producer never waited for room")
	if !q.Stop() {
		t.Error("Stop reports the producer closed; it was waiting")
	}
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("producer: %v, want ErrStopped", err)
	}
	q.Release()
	if s := p.Stats(); s.Response.Memory != 0 || s.Response.Disk != 0 {
		t.Errorf("after Release: %+v", s)
	}
}

// TestQueueSpillsOnlyForASlowConsumer: with its memory full, the producer
// waits SpillGrace for the consumer before it spills. A consumer that
// keeps taking (a fast client; the grace is a minute here, so that a
// loaded machine cannot make it slow) keeps a body of many times the
// memory out of the file; one that takes nothing gets it spilled after
// the default wait.
func TestQueueSpillsOnlyForASlowConsumer(t *testing.T) {
	t.Parallel()
	body := randomBody(8 << 20)
	t.Run("fast consumer", func(t *testing.T) {
		t.Parallel()
		p := NewPool(Limits{Dir: t.TempDir(), SpillGrace: time.Minute})
		var q Queue
		q.Start(p, 256<<10, 0)
		done := make(chan error, 1)
		go func() { done <- produce(&q, body) }()
		got, err := drain(&q, nil)
		<-done
		if err != io.EOF || !bytes.Equal(got, body) {
			t.Fatalf("consumer got %d bytes, %v; want the %d bytes of the body, io.EOF", len(got), err, len(body))
		}
		if s := p.Stats().Response.Spills; s != 0 {
			t.Errorf("%d spills for a consumer that kept up, want 0", s)
		}
		q.Release()
	})
	t.Run("consumer that takes nothing", func(t *testing.T) {
		t.Parallel()
		p := NewPool(Limits{Dir: t.TempDir()})
		var q Queue
		q.Start(p, 256<<10, 0)
		done := make(chan error, 1)
		go func() { done <- produce(&q, body) }()
		if err := <-done; err != io.EOF { // the producer did not wait for the consumer
			t.Fatalf("producer: %v, want io.EOF", err)
		}
		if s := p.Stats().Response.Spills; s != 1 {
			t.Errorf("%d spills for a consumer that took nothing, want 1", s)
		}
		got, err := drain(&q, nil)
		if err != io.EOF || !bytes.Equal(got, body) {
			t.Fatalf("consumer got %d bytes, %v; want the whole body", len(got), err)
		}
		q.Release()
	})
}
