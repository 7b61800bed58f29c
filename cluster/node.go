// Package cluster lets several edgeway instances share their runtime state
// through etcd: it is the only package that imports the etcd client. A
// Node holds the client, this instance's lease session (its member record
// and locks), the key that seals secrets before they leave the process,
// and the connection state. Serving never waits on it: what the cluster
// agreed is applied from watches into memory, and while etcd cannot be
// reached every instance keeps its last state and writes fail fast.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/edgeway/edgeway/conf"
)

// schema is the layout version under the prefix: every key is
// <prefix>/v1/...
const schema = "v1"

// CallTimeout bounds one etcd call made for an admin write or a start
// check, so that a write while etcd is unreachable fails in about this
// long rather than hanging.
const CallTimeout = 2 * time.Second

// keycheckPlain is sealed into meta/keycheck by the first instance; every
// later one must open it, or its key_file differs.
const keycheckPlain = "edgeway cluster keycheck v1"

// ErrUnavailable is returned (wrapped) when etcd cannot be reached.
var ErrUnavailable = errors.New("cluster store unreachable")

// Node is this instance's membership in the cluster.
type Node struct {
	cfg     conf.Cluster
	log     *slog.Logger
	cli     *clientv3.Client
	seal    *sealer
	started time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	sessMu sync.Mutex
	sess   *concurrency.Session // guarded by sessMu; nil until the first one

	connected atomic.Bool
	live      atomic.Int64             // instances with a member key, as last seen
	member    atomic.Pointer[Member]   // this instance's record
	members   atomic.Pointer[[]Member] // every live member, sorted
	memberSet chan struct{}            // a new member record to publish
	keyOK     atomic.Bool

	// Metrics is read by the metrics collector.
	Metrics Metrics
}

// Metrics are the node's counters, read by the admin metrics.
type Metrics struct {
	Resyncs      atomic.Int64 // full re-reads of a prefix after a watch error, compaction or new session
	FailedWrites atomic.Int64 // writes refused because etcd could not be reached
	LastSync     atomic.Int64 // unix nanoseconds of the last full read or watch event
	LockWaits    atomic.Int64 // lock acquisitions waited for (taken or not)
	LockWaitNs   atomic.Int64 // nanoseconds spent in them
}

// Start connects to etcd with cfg, reads the key file and checks it
// against the cluster's keycheck. A key file that is unreadable, open to
// group or others, of the wrong length, or that does not match the key
// the cluster was started with fails Start. etcd being unreachable does
// not: the node starts disconnected and connects in the background (the
// keycheck then runs on connection, and a mismatch is logged and keeps
// the node disconnected).
func Start(ctx context.Context, cfg conf.Cluster, log *slog.Logger) (*Node, error) {
	key, err := ReadKeyFile(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	s, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Etcd,
		DialTimeout:          CallTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		PermitWithoutStream:  true,
		TLS:                  tc,
		Logger:               zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	n := &Node{cfg: cfg, log: log.With("cluster", cfg.Name), cli: cli, seal: s, started: time.Now(), memberSet: make(chan struct{}, 1)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.live.Store(1)
	n.member.Store(&Member{Name: cfg.Name, Started: n.started.UTC()})
	switch err := n.keycheck(ctx); {
	case err == nil:
		n.keyOK.Store(true)
	case errors.Is(err, ErrUnavailable):
		n.log.Warn("cluster: etcd unreachable at start; serving from local state and retrying", "etcd", strings.Join(cfg.Etcd, " "), "err", err)
	default:
		cli.Close()
		n.cancel()
		return nil, err
	}
	n.wg.Add(1)
	go n.sessionLoop()
	n.Follow("members", &memberTable{n: n})
	return n, nil
}

// tlsConfig builds the client TLS configuration for https endpoints: the
// servers verified against ca (or the system roots), and the client
// certificate when one is set.
func tlsConfig(cfg conf.Cluster) (*tls.Config, error) {
	if len(cfg.Etcd) == 0 || !strings.HasPrefix(cfg.Etcd[0], "https://") {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t := cfg.TLS; t != nil {
		if t.CA != "" {
			pem, err := os.ReadFile(t.CA)
			if err != nil {
				return nil, fmt.Errorf("cluster tls ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("cluster tls ca %s: no PEM certificate in it", t.CA)
			}
			tc.RootCAs = pool
		}
		if t.Cert != "" {
			c, err := tls.LoadX509KeyPair(t.Cert, t.Key)
			if err != nil {
				return nil, fmt.Errorf("cluster tls cert: %w", err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
	}
	return tc, nil
}

// keycheck proves the key file matches the cluster's: the first instance
// seals a known text into meta/keycheck, every later one opens it.
func (n *Node) keycheck(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	k := n.Key("meta", "keycheck")
	sealed, err := n.seal.seal([]byte(keycheckPlain))
	if err != nil {
		return err
	}
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(sealed))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return n.unavailable("keycheck", err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return errors.New("cluster keycheck: meta/keycheck vanished; start again")
	}
	plain, err := n.seal.open(kvs[0].Value)
	if err != nil || string(plain) != keycheckPlain {
		return fmt.Errorf("cluster key does not match the one this cluster was started with (%s): %w", n.cfg.KeyFile, ErrKeyMismatch)
	}
	return nil
}

// unavailable wraps an etcd error: a permission or auth error as it is
// (an operator's mistake to fix), anything else as ErrUnavailable.
func (n *Node) unavailable(what string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "permission denied") || strings.Contains(msg, "authentication failed") || strings.Contains(msg, "user name is empty") {
		return fmt.Errorf("cluster %s: etcd refused edgeway's user (check its role on %s/): %w", what, n.cfg.Prefix, err)
	}
	return fmt.Errorf("cluster %s: %w: %w", what, ErrUnavailable, err)
}

// Client is the etcd client, for the packages' own stores in this package
// and in cmd/edgeway's wiring.
func (n *Node) Client() *clientv3.Client { return n.cli }

// Name is this instance's name among the members.
func (n *Node) Name() string { return n.cfg.Name }

// Prefix is the root of this cluster's keys (schema version included).
func (n *Node) Prefix() string { return n.cfg.Prefix + "/" + schema }

// Key joins parts under the cluster's prefix: Key("overrides", "api",
// "10.0.0.1:80") is "/edgeway/v1/overrides/api/10.0.0.1:80". Parts are
// taken as they are (no cleaning); a part must not contain "/" unless it
// means a folder.
func (n *Node) Key(parts ...string) string {
	return path.Join(append([]string{n.Prefix()}, parts...)...)
}

// Seal encrypts plain with the cluster key (AES-256-GCM; the envelope
// names the key by id, so a value sealed with another key is reported as
// ErrKeyMismatch by Open).
func (n *Node) Seal(plain []byte) ([]byte, error) { return n.seal.seal(plain) }

// Open decrypts what Seal made.
func (n *Node) Open(sealed []byte) ([]byte, error) { return n.seal.open(sealed) }

// Connected reports whether this node holds a live lease session and its
// member watch runs: false while etcd is unreachable.
func (n *Node) Connected() bool { return n.connected.Load() }

// LiveMembers is the number of instances with a live member record, as
// last seen (at least 1, this one). Cheap: one atomic load, fit for the
// request path (the rate limiter divides by it).
func (n *Node) LiveMembers() int { return int(max(1, n.live.Load())) }

// Started is when this node started.
func (n *Node) Started() time.Time { return n.started }

// Session returns the current lease session, creating one when there is
// none or the last one ended (lease expired or revoked while etcd was
// unreachable). Everything tied to this instance's life (the member
// record, locks) rides on it.
func (n *Node) Session(ctx context.Context) (*concurrency.Session, error) {
	n.sessMu.Lock()
	defer n.sessMu.Unlock()
	if s := n.sess; s != nil {
		select {
		case <-s.Done():
		default:
			return s, nil
		}
	}
	if !n.keyOK.Load() {
		if err := n.keycheck(ctx); err != nil {
			return nil, err
		}
		n.keyOK.Store(true)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	ttl := int(n.cfg.LeaseTTL / time.Second)
	g, err := n.cli.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, n.unavailable("lease", err)
	}
	s, err := concurrency.NewSession(n.cli, concurrency.WithTTL(ttl), concurrency.WithLease(g.ID), concurrency.WithContext(n.ctx))
	if err != nil {
		return nil, n.unavailable("session", err)
	}
	n.sess = s
	return s, nil
}

// Close revokes the session (freeing this instance's member record and
// locks at once) and closes the client.
func (n *Node) Close() {
	n.cancel()
	n.wg.Wait()
	n.sessMu.Lock()
	if s := n.sess; s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = n.cli.Revoke(ctx, s.Lease())
		cancel()
	}
	n.sessMu.Unlock()
	n.cli.Close()
}

// retryDelay is the pause between attempts of a background loop while
// etcd is unreachable.
const retryDelay = 500 * time.Millisecond

// wait pauses for d or until the node closes; false when it closed.
func (n *Node) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-n.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
