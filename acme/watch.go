package acme

import (
	"strings"
	"time"
)

// watch serves the certificates another instance stores, as its
// Watcher reports them: no instance waits for its own renewal time, or
// polls, to serve a certificate renewed elsewhere. The watch is started
// again (after a pause) when its feed ends before the manager stops.
func (m *Manager) watch(w Watcher) {
	for m.ctx.Err() == nil {
		keys, err := w.Watch(m.ctx, m.prefix+"/certs/")
		if err != nil {
			m.cfg.Log.Warn("acme: watching storage for certificates renewed elsewhere", "err", err)
		}
		for k := range keys {
			if name, ok := strings.CutSuffix(strings.TrimPrefix(k, m.prefix+"/certs/"), ".crt"); ok {
				m.reloadChanged(name)
			}
		}
		select {
		case <-m.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// reloadChanged serves name's stored certificate when it differs from
// the one served and is not due, and reschedules the name's renewal.
func (m *Manager) reloadChanged(name string) {
	m.mu.Lock()
	l := m.names[name]
	m.mu.Unlock()
	if l == nil {
		return
	}
	c := m.loadStored(m.ctx, name)
	if c == nil || c.Leaf.Equal(curLeaf(l)) || !m.cfg.Now().Before(renewTime(c.Leaf, m.cfg.RenewBefore, 0)) {
		return
	}
	if err := m.serve(name, l, c, "loaded", 0); err != nil {
		m.cfg.Log.Warn("acme: serving a certificate renewed elsewhere", "name", name, "err", err)
		return
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}
