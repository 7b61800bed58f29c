package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/internal/atomicfile"
)

// ticketKeysKept is how many keys a record holds: next (published a
// period before it seals), current (seals), and the two before (still
// open), so a ticket opens for two to three periods after it was issued.
const ticketKeysKept = 4

// ticketRecord is the value of tls/ticket-keys, sealed: Keys is [next,
// current, previous...]. RotatedAt and Period come from the instance that
// rotated last, so that every instance schedules the next rotation from
// the same instant.
type ticketRecord struct {
	RotatedAt time.Time  `json:"rotated_at"`
	Period    string     `json:"period"`
	By        string     `json:"by"`
	Keys      [][32]byte `json:"keys"`
}

// sealing is the keys in the order a TLS store wants them: the first
// seals (current), all open (next too, so a ticket sealed by an instance
// that already rotated opens on one that has not seen the rotation yet).
func (r *ticketRecord) sealing() [][32]byte {
	if len(r.Keys) < 2 {
		return r.Keys
	}
	out := make([][32]byte, 0, len(r.Keys))
	out = append(out, r.Keys[1], r.Keys[0])
	return append(out, r.Keys[2:]...)
}

// rotated is r one period on: a fresh next, the old next sealing.
func (r *ticketRecord) rotated(by string, period time.Duration, now time.Time) *ticketRecord {
	keys := append([][32]byte{randomKey()}, r.Keys...)
	if len(keys) == 1 { // first record: next and current
		keys = append([][32]byte{randomKey()}, keys...)
	}
	if len(keys) > ticketKeysKept {
		keys = keys[:ticketKeysKept]
	}
	return &ticketRecord{RotatedAt: now.UTC(), Period: period.String(), By: by, Keys: keys}
}

func randomKey() [32]byte {
	var k [32]byte
	rand.Read(k[:]) // never fails (crypto/rand, Go 1.24+)
	return k
}

// TicketKeys shares the TLS session ticket keys of the cluster: one sealed
// record under tls/ticket-keys, followed by every instance, which hands
// its keys to set (edgetls.Store.SetTicketKeys) as they change. Whichever
// instance first sees the period pass rotates, by compare-and-swap on the
// record's revision, so exactly one rotation happens per period however
// many instances try; the others get it from their watch. While etcd
// cannot be reached the instances keep the last keys (resumption across
// instances keeps working); an outage longer than two periods makes each
// rotate locally (logged), so that no key seals for much longer than it
// should, at the cost of cross-instance resumption until etcd returns.
type TicketKeys struct {
	n      *Node
	period time.Duration
	cache  string // the sealed record on disk; "" for none
	set    func([][32]byte)

	rec  atomic.Pointer[ticketRecord] // nil until read
	rev  atomic.Int64                 // ModRevision of rec; 0 when there is none
	seen chan struct{}                // a new record or the first read (capacity 1)

	mu        sync.Mutex
	local     time.Time // when keys were last rotated locally during an outage
	localKeys [][32]byte
}

// ticketKeysKey is the record's key under tls/.
const ticketKeysKey = "ticket-keys"

// TicketKeys starts following and rotating the cluster's session ticket
// keys, rotated every period; set receives the keys, first the sealing
// one, each time they change (never concurrently). cacheFile ("" for
// none) keeps the record as etcd holds it (sealed), rewritten on each
// change and read here first, so that an instance restarted while etcd
// is unreachable resumes the tickets the others issued.
func (n *Node) TicketKeys(period time.Duration, cacheFile string, set func([][32]byte)) *TicketKeys {
	tk := &TicketKeys{n: n, period: period, cache: cacheFile, set: set, seen: make(chan struct{}, 1)}
	tk.readCache()
	n.Follow("tls", tk)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.recover("ticket rotation")
		tk.rotateLoop()
	}()
	return tk
}

// Reset is the Handler side: the record as read in full (none yet is
// fine: the rotation loop makes the first).
func (tk *TicketKeys) Reset(kvs []KV, _ int64) {
	for _, kv := range kvs {
		if kv.Key == ticketKeysKey {
			tk.Change(Event{KV: kv})
			return
		}
	}
	tk.rev.Store(0)
	tk.notify()
}

// Change is the Handler side: the record was rewritten.
func (tk *TicketKeys) Change(ev Event) {
	if ev.Key != ticketKeysKey {
		return
	}
	if ev.Deleted {
		tk.rev.Store(0)
		tk.notify()
		return
	}
	r, err := tk.open(ev.Value)
	if err != nil {
		tk.n.log.Error("cluster: session ticket keys unreadable; keeping the last ones", "err", err)
		return
	}
	tk.mu.Lock()
	tk.local, tk.localKeys = time.Time{}, nil // etcd is back: the cluster's keys again
	tk.mu.Unlock()
	tk.rec.Store(r)
	tk.rev.Store(ev.ModRevision)
	tk.set(r.sealing())
	tk.notify()
	if tk.cache != "" {
		if err := atomicfile.Write(tk.cache, ev.Value); err != nil {
			tk.n.log.Warn("cluster: writing the ticket key cache", "file", tk.cache, "err", err)
		}
	}
}

// readCache starts from the cached record, when there is one (its
// revision stays 0: only etcd's record is rotated from).
func (tk *TicketKeys) readCache() {
	if tk.cache == "" {
		return
	}
	b, err := os.ReadFile(tk.cache)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var r *ticketRecord
	if err == nil {
		r, err = tk.open(b)
	}
	if err != nil {
		tk.n.log.Warn("cluster: ticket key cache unreadable; waiting for etcd", "file", tk.cache, "err", err)
		return
	}
	tk.rec.Store(r)
	tk.set(r.sealing())
}

func (tk *TicketKeys) notify() {
	select {
	case tk.seen <- struct{}{}:
	default:
	}
}

func (tk *TicketKeys) open(v []byte) (*ticketRecord, error) {
	plain, err := tk.n.Open(v)
	if err != nil {
		return nil, fmt.Errorf("ticket keys: %w", err)
	}
	var r ticketRecord
	if err := json.Unmarshal(plain, &r); err != nil {
		return nil, fmt.Errorf("ticket keys: %w", err)
	}
	if len(r.Keys) == 0 {
		return nil, errors.New("ticket keys: the record holds no key")
	}
	return &r, nil
}

// rotateLoop makes the first record, then rotates each time the record's
// period has passed, with a jitter of up to 2 s (an eighth of the period
// when shorter) so that instances rarely race; the compare-and-swap
// settles the races that remain. It starts after the first full read.
func (tk *TicketKeys) rotateLoop() {
	for {
		select {
		case <-tk.n.ctx.Done():
			return
		case <-tk.seen:
		}
		for tk.n.ctx.Err() == nil {
			wait := tk.untilDue()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-tk.n.ctx.Done():
					t.Stop()
					return
				case <-tk.seen: // a new record: schedule from it
					t.Stop()
					continue
				case <-t.C:
				}
			}
			if _, err := tk.Rotate(tk.n.ctx); err != nil {
				tk.outage(err)
				if !tk.n.wait(retryDelay * 4) {
					return
				}
			}
		}
	}
}

// untilDue is the time left before the next rotation is due, jittered.
func (tk *TicketKeys) untilDue() time.Duration {
	r := tk.rec.Load()
	if r == nil || tk.rev.Load() == 0 {
		return 0
	}
	return time.Until(r.RotatedAt.Add(tk.period)) + mrand.N(min(2*time.Second, tk.period/8)+1)
}

// Rotate rotates the keys in etcd once, unless another instance rotated
// since this one last saw the record: a compare-and-swap on the record's
// revision. It reports whether this call rotated. Rotations are normally
// due by the clock; Rotate is exported for tools and tests that rotate
// now. An error wraps ErrUnavailable when etcd could not be reached.
func (tk *TicketKeys) Rotate(ctx context.Context) (bool, error) {
	seen := tk.rev.Load()
	cur := tk.rec.Load()
	return tk.rotateFrom(ctx, seen, cur)
}

// rotateFrom rotates cur, the record at revision seen (0: none yet).
func (tk *TicketKeys) rotateFrom(ctx context.Context, seen int64, cur *ticketRecord) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	key := tk.n.Key("tls", ticketKeysKey)
	if seen == 0 || cur == nil {
		cur = &ticketRecord{}
	}
	next := cur.rotated(tk.n.Name(), tk.period, time.Now())
	b, err := json.Marshal(next)
	if err == nil {
		b, err = tk.n.Seal(b)
	}
	if err != nil {
		return false, fmt.Errorf("cluster ticket keys: %w", err)
	}
	resp, err := tk.n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", seen)).
		Then(clientv3.OpPut(key, string(b))).Commit()
	if err != nil {
		tk.n.Metrics.FailedWrites.Add(1)
		return false, tk.n.unavailable("ticket key rotation", err)
	}
	if !resp.Succeeded {
		// Another instance rotated first (or the watch is behind): wait
		// for the record the watch brings.
		return false, tk.waitNewer(ctx, seen)
	}
	tk.n.log.Info("cluster: session ticket keys rotated", "period", tk.period)
	return true, tk.waitNewer(ctx, seen)
}

// waitNewer waits until the watch brought a record newer than rev (or ctx
// ends: then the loop simply tries again).
func (tk *TicketKeys) waitNewer(ctx context.Context, rev int64) error {
	for tk.rev.Load() == rev {
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}

// outage rotates locally when etcd has been unreachable for more than two
// periods past the last rotation, then once a period: resumption across
// instances stops until etcd returns, but no key seals for much longer
// than it should.
func (tk *TicketKeys) outage(err error) {
	r := tk.rec.Load()
	last := time.Time{}
	if r != nil {
		last = r.RotatedAt
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	limit := 2 * tk.period
	if tk.local.After(last) { // already rotating locally: once a period
		last, limit = tk.local, tk.period
	}
	if r == nil || time.Since(last) < limit {
		return
	}
	keys := tk.localKeys
	if keys == nil {
		keys = r.sealing()
	}
	keys = append([][32]byte{randomKey()}, keys...)[:min(len(keys)+1, ticketKeysKept)]
	tk.local, tk.localKeys = time.Now(), keys
	tk.set(keys)
	tk.n.log.Warn("cluster: etcd unreachable for two ticket periods; rotating session ticket keys locally "+
		"(tickets resume on this instance only until etcd returns)", "err", err)
}

// compile-time check that TicketKeys is a Handler.
var _ Handler = (*TicketKeys)(nil)
