package conf

// Checks that tie TLS listeners, tcp routes and upstreams together; they
// run once every block is read, since a tls block or an upstream may come
// after the listener or route that needs it.

// checkTLSListeners refuses a TLS listener when no tls block gives it a
// certificate to serve (files, self-signed names or an ACME CA).
func (b *builder) checkTLSListeners() {
	s := b.cfg.TLS
	if s != nil && (len(s.Certificates) > 0 || len(s.SelfSigned) > 0 || s.ACME != nil) {
		return
	}
	own := map[string]bool{}
	for _, l := range b.cfg.Listeners {
		own[l.Name] = l.TLS != nil && l.TLS.Certificates != nil
	}
	for _, l := range b.tlsListeners {
		if own[l.name] {
			continue
		}
		b.errorf(l.pos, "listener %q is a TLS listener but no tls block provides certificates "+
			"(expected a top-level tls block with `cert CERTFILE KEYFILE`, `self_signed NAME` or an `acme` block, or those lines in the listener's tls block)", l.name)
	}
}

// checkTCPRoutes warns about a tcp route that no TLS listener serves (tcp
// routes match on the ClientHello, so a cleartext listener never reaches
// them) and refuses one whose upstream speaks h2c (a tcp route forwards
// the TLS bytes as they are).
func (b *builder) checkTCPRoutes() {
	tlsListener := make(map[string]bool, len(b.tlsListeners))
	for _, l := range b.tlsListeners {
		tlsListener[l.name] = true
	}
	for _, r := range b.cfg.TCPRoutes {
		reached := len(r.Listeners) == 0 && len(b.tlsListeners) > 0
		for _, name := range r.Listeners {
			reached = reached || tlsListener[name]
		}
		if !reached {
			b.warnAt(r.Pos, "tcp route %q reaches no TLS listener, so it never matches (tcp routes are served on listeners whose protocols include tls)", r.Name)
		}
	}
	ups := make(map[string]*Upstream, len(b.cfg.Upstreams))
	for i := range b.cfg.Upstreams {
		ups[b.cfg.Upstreams[i].Name] = &b.cfg.Upstreams[i]
	}
	for _, t := range b.tcpTo {
		u := ups[t.upstream]
		switch {
		case u == nil:
		case u.Protocol == "h2c" || u.Protocol == "h2":
			b.errorf(t.pos, "tcp route %q forwards raw bytes, but upstream %q has `protocol %s` (use an upstream without a protocol line)", t.route, t.upstream, u.Protocol)
		case u.TLS != nil:
			b.errorf(t.pos, "tcp route %q forwards raw bytes, but upstream %q has a tls block (tcp routes dial their servers in cleartext)", t.route, t.upstream)
		}
	}
}
