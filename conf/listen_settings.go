package conf

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// ReloadClass says what a reload does with a listener setting that
// changed.
type ReloadClass int

const (
	// Live settings take effect on reload: the router reads them from
	// each configuration it applies, and the listener applies its
	// timeouts to the requests and connections that start after it
	// (listeners.Server.Update).
	Live ReloadClass = iota + 1
	// Restart settings are fixed when the listener is bound: a reload that
	// changes one keeps the old value, and says so by name.
	Restart
	// Identity settings name a bound socket (name, address, protocols): a
	// reload that changes one is refused whole.
	Identity
)

// ListenerSetting is one setting of a listen block, declared once: the
// directive that writes it, the Listener field that holds it, its reload
// class, its default and its handler. The listen block's handlers, the
// defaults of DefaultListener and what a reload does with a change all
// come from this one row; what the setting means is documented on its
// Listener field, and its syntax (arguments) in the routes vocabulary.
type ListenerSetting struct {
	Directive string
	Field     string // the Listener field
	Class     ReloadClass
	// Default is the value of a listen block without the directive,
	// written as the directive's arguments are ("10s", "on", "32KiB",
	// "http1 h2c"); DefaultListener reads it with the handler, so that a
	// default is spelled in one place and in the language a user writes.
	// Empty: the zero value (name, addr), or a block with a Default
	// function of its own (tls, h2, quic).
	Default string
	set     handler[*Listener]
}

// ListenerSettings lists every field of Listener; a test fails when a
// field or a listen directive has no row, so that a new setting cannot be
// forgotten by reloads.
var ListenerSettings = []ListenerSetting{
	{"name", "Name", Identity, "", nil}, // the block's argument
	{"addr", "Addr", Identity, "", listenAddrDirective},
	{"protocols", "Protocols", Identity, "http1 h2c", listenProtocols},
	{"tls", "TLS", Restart, "", listenTLS},
	{"proxy_protocol", "ProxyProtocol", Restart, "", proxyProtocol},
	{"redirect_https", "RedirectHTTPS", Restart, "", redirectHTTPSListener},
	{"h2", "H2", Restart, "", h2Directive},
	{"quic", "QUIC", Restart, "", quicDirective},
	{"read_header_timeout", "ReadHeaderTimeout", Live, "10s", durationSetting(func(l *Listener) *time.Duration { return &l.ReadHeaderTimeout })},
	{"idle_timeout", "IdleTimeout", Live, "60s", durationSetting(func(l *Listener) *time.Duration { return &l.IdleTimeout })},
	{"write_timeout", "WriteTimeout", Live, "60s", writeTimeout},
	{"max_header_bytes", "MaxHeaderBytes", Restart, "32KiB", maxHeaderBytes},
	{"max_body_bytes", "MaxBodyBytes", Live, "100MiB", maxBodyBytes},
	{"body_timeout", "BodyTimeout", Live, "10s", bodyTimeout},
	{"body_min_rate", "BodyMinRate", Live, "500B/s 10s", bodyMinRate},
	{"max_conns", "MaxConns", Restart, "0", func(b *builder, l *Listener, d *routes.Directive) { b.setInt(d, 0, &l.MaxConns) }},
	{"backlog", "Backlog", Restart, "0", func(b *builder, l *Listener, d *routes.Directive) { b.setInt(d, 0, &l.Backlog) }},
	{"reuseport", "ReusePort", Restart, "off", switchSetting(func(l *Listener) *bool { return &l.ReusePort })},
	{"nodelay", "NoDelay", Live, "on", switchSetting(func(l *Listener) *bool { return &l.NoDelay })},
	{"accept_loops", "AcceptLoops", Restart, "0", func(b *builder, l *Listener, d *routes.Directive) { b.setIntRange(d, 0, 256, "", &l.AcceptLoops) }},
	{"defer_accept", "DeferAccept", Restart, "1s", func(b *builder, l *Listener, d *routes.Directive) {
		b.setSeconds(d, maxDeferAccept, true, &l.DeferAccept)
	}},
	{"tcp_fastopen", "FastOpen", Restart, "off", func(b *builder, l *Listener, d *routes.Directive) { b.setIntRange(d, 1, 65535, "off", &l.FastOpen) }},
	{"keepalive", "KeepAlive", Restart, "on", switchSetting(func(l *Listener) *bool { return &l.KeepAlive })},
	{"keepalive_idle", "KeepAliveIdle", Restart, "60s", func(b *builder, l *Listener, d *routes.Directive) {
		b.setSeconds(d, maxKeepAlive, false, &l.KeepAliveIdle)
	}},
	{"keepalive_interval", "KeepAliveInterval", Restart, "15s", func(b *builder, l *Listener, d *routes.Directive) {
		b.setSeconds(d, maxKeepAlive, false, &l.KeepAliveInterval)
	}},
	{"keepalive_count", "KeepAliveCount", Restart, "4", func(b *builder, l *Listener, d *routes.Directive) { b.setIntRange(d, 0, 127, "", &l.KeepAliveCount) }},
	{"rcvbuf", "RecvBuffer", Restart, "0", func(b *builder, l *Listener, d *routes.Directive) { socketBuffer(b, d, &l.RecvBuffer) }},
	{"sndbuf", "SendBuffer", Restart, "0", func(b *builder, l *Listener, d *routes.Directive) { socketBuffer(b, d, &l.SendBuffer) }},
	{"trusted_proxies", "TrustedProxies", Live, "", trustedProxies},
	{"allow", "Allow", Live, "", func(b *builder, l *Listener, d *routes.Directive) { b.addressList(d, &l.Allow) }},
	{"deny", "Deny", Live, "", func(b *builder, l *Listener, d *routes.Directive) { b.addressList(d, &l.Deny) }},
	{"error_page", "ErrorPages", Live, "", func(b *builder, l *Listener, d *routes.Directive) { b.errorPage(d, &l.ErrorPages) }},
	{"not_found_body", "NotFoundBody", Live, "404 page not found\n", func(_ *builder, l *Listener, d *routes.Directive) { l.NotFoundBody = d.Args[0].Value }},
	{"normalize", "Normalize", Live, "on", switchSetting(func(l *Listener) *bool { return &l.Normalize })},
	{"h2_server", "H2Server", Restart, "own", h2Server},
}

// listenTable is the listen block's handlers, from ListenerSettings.
var listenTable = func() table[*Listener] {
	t := table[*Listener]{}
	for _, s := range ListenerSettings {
		if s.set != nil {
			t[s.Directive] = s.set
		}
	}
	return t
}()

// defaultListener is a Listener with every row's Default applied, made
// once: the defaults are constants, and a test reads each of them.
var defaultListener = sync.OnceValue(func() Listener {
	l := Listener{H2: DefaultH2Limits(), QUIC: DefaultQUIC()}
	b := newBuilder(nil)
	for _, s := range ListenerSettings {
		if s.Default == "" {
			continue
		}
		d := &routes.Directive{Name: s.Directive, Kind: routes.ListenBlock}
		for _, v := range defaultArgs(s) {
			d.Args = append(d.Args, routes.Arg{Kind: routes.Word, Value: v})
		}
		s.set(b, &l, d)
	}
	if len(b.errs) > 0 {
		panic(fmt.Sprintf("conf: a listener default does not read: %v", b.errs))
	}
	return l
})

// defaultArgs splits a row's Default into arguments: at spaces for a
// directive of several arguments, whole for one of one argument (a text
// such as not_found_body's).
func defaultArgs(s ListenerSetting) []string {
	for _, spec := range routes.Vocabulary(routes.ListenBlock) {
		if spec.Name == s.Directive && spec.Max == 1 {
			return []string{s.Default}
		}
	}
	return strings.Fields(s.Default)
}

// DefaultListener returns a Listener with every documented default filled
// in, as a `listen` block with only an addr produces.
func DefaultListener(name, addr string) Listener {
	l := defaultListener()
	l.Name, l.Addr = name, addr
	l.Protocols = append([]string(nil), l.Protocols...)
	return l
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

// h2Server reads h2_server: which HTTP/2 server a listener runs.
func h2Server(b *builder, l *Listener, d *routes.Directive) {
	if v, ok := b.oneOf(d.Args[0], "h2_server", []string{"own", "xnet"}); ok {
		l.H2Server = v
	}
}
