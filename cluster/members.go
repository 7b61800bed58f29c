package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one instance's record under members/<name>, kept on its
// lease session: it disappears within lease_ttl of the instance dying.
type Member struct {
	Name       string    `json:"name"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	ConfigHash string    `json:"config_hash"`
}

// SetMember sets what this instance publishes about itself (its build
// version and the hash of the configuration it runs) and republishes it.
func (n *Node) SetMember(version, configHash string) {
	m := *n.member.Load()
	m.Version, m.ConfigHash = version, configHash
	n.member.Store(&m)
	select {
	case n.memberSet <- struct{}{}:
	default:
	}
}

// Members returns the live members as last seen, sorted by name.
func (n *Node) Members() []Member {
	if p := n.members.Load(); p != nil {
		return *p
	}
	return nil
}

// sessionLoop keeps a lease session and this instance's member record on
// it: when the session ends (etcd unreachable longer than the lease) the
// node counts as disconnected until a new session and record are made.
func (n *Node) sessionLoop() {
	defer n.wg.Done()
	defer n.recover("session")
	for n.ctx.Err() == nil {
		s, err := n.Session(n.ctx)
		if err == nil {
			err = n.putMember(s.Lease())
		}
		if err != nil {
			n.setConnected(false, err)
			if !n.wait(retryDelay) {
				return
			}
			continue
		}
		n.setConnected(true, nil)
		select {
		case <-n.ctx.Done():
			return
		case <-s.Done():
			n.setConnected(false, errSessionEnded)
		case <-n.memberSet:
		}
	}
}

var errSessionEnded = errors.New("lease session ended")

func (n *Node) setConnected(on bool, err error) {
	if n.connected.Swap(on) == on {
		return
	}
	if on {
		n.log.Info("cluster: connected to etcd", "members", n.LiveMembers())
	} else {
		n.log.Warn("cluster: disconnected from etcd; serving the last state", "err", err)
	}
}

func (n *Node) putMember(lease clientv3.LeaseID) error {
	b, err := json.Marshal(n.member.Load())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(n.ctx, CallTimeout)
	defer cancel()
	if _, err := n.cli.Put(ctx, n.Key("members", n.cfg.Name), string(b), clientv3.WithLease(lease)); err != nil {
		return n.unavailable("member record", err)
	}
	return nil
}

// memberTable follows members/ and publishes the count and the list.
type memberTable struct {
	n   *Node
	all map[string]Member
}

func (t *memberTable) Reset(kvs []KV, _ int64) {
	t.all = make(map[string]Member, len(kvs))
	for _, kv := range kvs {
		t.put(kv)
	}
	t.publish()
}

func (t *memberTable) Change(ev Event) {
	if ev.Deleted {
		delete(t.all, ev.Key)
	} else {
		t.put(ev.KV)
	}
	t.publish()
}

func (t *memberTable) put(kv KV) {
	var m Member
	if json.Unmarshal(kv.Value, &m) != nil {
		m = Member{Name: kv.Key}
	}
	t.all[kv.Key] = m
}

func (t *memberTable) publish() {
	list := make([]Member, 0, len(t.all))
	for _, m := range t.all {
		list = append(list, m)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	t.n.members.Store(&list)
	t.n.live.Store(int64(len(list)))
}

// compile-time check that the member table is a Handler.
var _ Handler = (*memberTable)(nil)
