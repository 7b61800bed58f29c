package router

import (
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/conf"
)

// errorPages are a listener's or route's `error_page` lines, compiled at
// load time: per status, its variants (one per content type) with their
// bodies cut at the $status and $request_id placeholders.
type errorPages map[int][]*pageVariant

type pageVariant struct {
	contentType string
	media       string // the content type without parameters, for Accept
	segs        []pageSeg
}

// pageSeg is literal text, then a placeholder (none after the last).
type pageSeg struct {
	text string
	fill int // fillNone, fillStatus, fillRequestID
}

const (
	fillNone = iota
	fillStatus
	fillRequestID
)

func compileErrorPages(pages []conf.ErrorPage) errorPages {
	if len(pages) == 0 {
		return nil
	}
	m := errorPages{}
	for _, p := range pages {
		v := &pageVariant{contentType: p.ContentType, segs: cutPlaceholders(p.Body)}
		v.media, _, _ = strings.Cut(p.ContentType, ";")
		for _, c := range p.Codes {
			m[c] = append(m[c], v)
		}
	}
	return m
}

// cutPlaceholders splits body at $status and $request_id.
func cutPlaceholders(body string) []pageSeg {
	var segs []pageSeg
	for {
		i := strings.IndexByte(body, '$')
		if i < 0 {
			return append(segs, pageSeg{text: body})
		}
		switch rest := body[i:]; {
		case strings.HasPrefix(rest, "$status"):
			segs = append(segs, pageSeg{text: body[:i], fill: fillStatus})
			body = rest[len("$status"):]
		case strings.HasPrefix(rest, "$request_id"):
			segs = append(segs, pageSeg{text: body[:i], fill: fillRequestID})
			body = rest[len("$request_id"):]
		default:
			segs = append(segs, pageSeg{text: body[:i+1]})
			body = rest[1:]
		}
	}
}

// render appends the page's body for status and request ID id to dst.
func (v *pageVariant) render(dst []byte, status int, id string) []byte {
	for _, s := range v.segs {
		dst = append(dst, s.text...)
		switch s.fill {
		case fillStatus:
			dst = strconv.AppendInt(dst, int64(status), 10)
		case fillRequestID:
			dst = append(dst, id...)
		}
	}
	return dst
}

// errorPage returns the page for an answer with status: the route's,
// else the listener's, the variant the Accept field prefers; nil: none.
func (x *exchange) errorPage(status int) *pageVariant {
	var vs []*pageVariant
	if x.rt != nil {
		vs = x.rt.errorPages[status]
	}
	if vs == nil {
		vs = x.l.errorPages[status]
	}
	switch len(vs) {
	case 0:
		return nil
	case 1:
		return vs[0]
	}
	accept := x.in.Header.Get("Accept")
	best, bestQ := vs[0], -1.0
	for _, v := range vs {
		if q := acceptQ(accept, v.media); q > bestQ {
			best, bestQ = v, q
		}
	}
	return best
}

// acceptQ is the quality the Accept value gives media type mt (RFC 9110
// §12.5.1): its own entry, else type/*, else */*; 1 when Accept is empty,
// 0 when nothing matches. It allocates nothing.
func acceptQ(accept, mt string) float64 {
	if accept == "" {
		return 1
	}
	typ, _, _ := strings.Cut(mt, "/")
	exact, wild, any := -1.0, -1.0, -1.0
	for entry := range strings.SplitSeq(accept, ",") {
		name, params, _ := strings.Cut(entry, ";")
		name = strings.TrimSpace(name)
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		switch {
		case strings.EqualFold(name, mt):
			exact = max(exact, q)
		case strings.HasSuffix(name, "/*") && strings.EqualFold(name[:len(name)-2], typ):
			wild = max(wild, q)
		case name == "*/*":
			any = max(any, q)
		}
	}
	switch {
	case exact >= 0:
		return exact
	case wild >= 0:
		return wild
	case any >= 0:
		return any
	}
	return 0
}
