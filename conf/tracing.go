package conf

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// Tracing is the `tracing { ... }` block: W3C trace context
// (traceparent, tracestate) propagated with edgeway as a hop, and one
// OpenTelemetry server span per sampled request, exported over
// OTLP/HTTP. Config.Tracing is nil when the main file has no such block:
// tracing is off, and traceparent and tracestate pass through untouched
// like any other field. The block is read at start only (a reload that
// changes it is applied on restart, and says so).
type Tracing struct {
	// OTLP is the collector's OTLP/HTTP traces URL, http or https
	// ("http://127.0.0.1:4318/v1/traces"). A URL without a path gets
	// /v1/traces, the OTLP default path. Required: there is no default.
	OTLP string
	// Sample is the share of new traces that get a span, from 0 to 1
	// (`sample 1%` is 0.01). It applies to requests without a valid
	// traceparent; one with a traceparent follows the client's sampled
	// flag (parent-based sampling, as OpenTelemetry's
	// ParentBased(TraceIDRatioBased)). Default 1 (100%), OpenTelemetry's
	// own default; set it lower for a busy edge.
	Sample float64
	// ServiceName is the service.name resource attribute of the spans.
	// Default "edgeway".
	ServiceName string
}

// DefaultServiceName is Tracing.ServiceName when none is written.
const DefaultServiceName = "edgeway"

func tracingDirective(b *builder, _ *routes.File, d *routes.Directive) {
	t := &Tracing{Sample: 1, ServiceName: DefaultServiceName}
	run(b, tracingTable, t, d.Block.Directives)
	if !hasDirective(d, "otlp") {
		b.missingf(d, "tracing block has no otlp (the collector's OTLP/HTTP traces URL, such as http://127.0.0.1:4318/v1/traces)")
	}
	b.cfg.Tracing = t
}

var tracingTable = table[*Tracing]{
	"otlp": func(b *builder, t *Tracing, d *routes.Directive) {
		u, err := otlpURL(d.Args[0].Value)
		if err != nil {
			b.errorf(d.Args[0].Pos, "otlp: %v", err)
			return
		}
		t.OTLP = u
	},
	"sample": func(b *builder, t *Tracing, d *routes.Directive) {
		v, err := parseShare(d.Args[0].Value)
		if err != nil {
			b.errorf(d.Args[0].Pos, "sample: %v", err)
			return
		}
		t.Sample = v
	},
	"service_name": func(b *builder, t *Tracing, d *routes.Directive) {
		v := d.Args[0].Value
		if v == "" || len(v) > 255 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			b.errorf(d.Args[0].Pos, "service_name: invalid name %q (expected 1 to 255 printable characters)", v)
			return
		}
		t.ServiceName = v
	},
}

// otlpURL checks an OTLP/HTTP URL and gives one without a path the
// default /v1/traces.
func otlpURL(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("invalid URL %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("URL %q must start with http:// or https://", s)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("URL %q has no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("URL %q: expected scheme://host[:port][/path] (no user, query or fragment)", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("URL %q: invalid port %q", s, p)
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// parseShare reads a percentage, "N%" or "N" with up to four decimals
// ("0.5%", "100%"), from 0 to 100, as a share from 0 to 1.
func parseShare(s string) (float64, error) {
	n := strings.TrimSuffix(s, "%")
	whole, frac, _ := strings.Cut(n, ".")
	if whole == "" || len(frac) > 4 || !allDigits(whole) || !allDigits(frac) || strings.HasSuffix(n, ".") {
		return 0, fmt.Errorf("invalid percentage %q (expected a number from 0%% to 100%% such as 1%% or 0.5%%)", s)
	}
	v, err := strconv.ParseFloat(n, 64)
	if err != nil || v > 100 {
		return 0, fmt.Errorf("%s is out of range (expected 0%% to 100%%)", s)
	}
	return v / 100, nil
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
