package conf

import "reflect"

// ReloadClass says what a reload does with a listener setting that
// changed.
type ReloadClass int

const (
	// Live settings take effect on reload: the router reads them from
	// each configuration it applies.
	Live ReloadClass = iota + 1
	// Restart settings are fixed when the listener is bound: a reload that
	// changes one keeps the old value, and says so by name.
	Restart
	// Identity settings name a bound socket (name, address, protocols): a
	// reload that changes one is refused whole.
	Identity
)

// ListenerSetting is one setting of a listen block: the directive that
// writes it, the Listener field that holds it and its reload class.
type ListenerSetting struct {
	Directive string
	Field     string // the Listener field
	Class     ReloadClass
}

// ListenerSettings lists every field of Listener with its class; a test
// fails when a field has none, so that a new setting cannot be forgotten
// by reloads.
var ListenerSettings = []ListenerSetting{
	{"name", "Name", Identity},
	{"addr", "Addr", Identity},
	{"protocols", "Protocols", Identity},
	{"tls", "TLS", Restart},
	{"proxy_protocol", "ProxyProtocol", Restart},
	{"redirect_https", "RedirectHTTPS", Restart},
	{"h2", "H2", Restart},
	{"quic", "QUIC", Restart},
	{"read_header_timeout", "ReadHeaderTimeout", Restart},
	{"idle_timeout", "IdleTimeout", Restart},
	{"write_timeout", "WriteTimeout", Restart},
	{"max_header_bytes", "MaxHeaderBytes", Restart},
	{"max_body_bytes", "MaxBodyBytes", Live},
	{"max_conns", "MaxConns", Restart},
	{"backlog", "Backlog", Restart},
	{"reuseport", "ReusePort", Restart},
	{"nodelay", "NoDelay", Restart},
	{"accept_loops", "AcceptLoops", Restart},
	{"defer_accept", "DeferAccept", Restart},
	{"tcp_fastopen", "FastOpen", Restart},
	{"keepalive", "KeepAlive", Restart},
	{"keepalive_idle", "KeepAliveIdle", Restart},
	{"keepalive_interval", "KeepAliveInterval", Restart},
	{"keepalive_count", "KeepAliveCount", Restart},
	{"rcvbuf", "RecvBuffer", Restart},
	{"sndbuf", "SendBuffer", Restart},
	{"trusted_proxies", "TrustedProxies", Live},
	{"not_found_body", "NotFoundBody", Live},
	{"normalize", "Normalize", Live},
}

// ChangedSettings returns the directives of the listener settings whose
// values differ between a and b, of class c. Positions in the files do
// not count as a change.
func ChangedSettings(a, b Listener, c ReloadClass) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for _, s := range ListenerSettings {
		if s.Class != c {
			continue
		}
		if !reflect.DeepEqual(withoutPos(va.FieldByName(s.Field)), withoutPos(vb.FieldByName(s.Field))) {
			out = append(out, s.Directive)
		}
	}
	return out
}

// withoutPos is v's value with its Pos fields zeroed (a block moves when
// lines are added above it); pointers are followed.
func withoutPos(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return v.Interface()
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	if f := c.FieldByName("Pos"); f.IsValid() && f.Type() == reflect.TypeFor[Pos]() {
		f.Set(reflect.Zero(f.Type()))
	}
	return c.Interface()
}
