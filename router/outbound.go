package router

import (
	"io"

	"github.com/edgeway/edgeway/upstream/httpclient"
)

// buildOutbound fills x.out: the target after path rewriting, the
// end-to-end fields of the request, edgeway's forwarding headers and the
// route's header operations.
func (x *exchange) buildOutbound() {
	in := x.in
	x.target = append(append(x.target[:0], x.path...), '?')
	target := x.target[:len(x.target)-1]
	if x.query != "" || in.HasQuery() {
		target = append(target, '?')
		target = append(target, x.query...)
	}
	host := in.Host
	if host == "" {
		// An HTTP/1.0 request may come without Host; name the address
		// the client connected to rather than the upstream's own.
		host = x.localHost()
	}
	x.outHdr = appendEndToEnd(x.outHdr[:0], in.Header, true)
	x.outHdr = x.setForwarded(x.outHdr)
	if x.tc.on {
		x.outHdr = x.setTraceparent(x.outHdr)
	}
	x.outHdr = applyHeaders(x.outHdr, x.rt.chain.reqHeader)
	if x.rt.auth != nil {
		x.outHdr = x.setRemoteUser(x.outHdr)
	}
	if x.rt.fwdAuth != nil {
		x.outHdr = x.setAuthFields(x.outHdr)
	}
	if x.rt.jwt != nil {
		x.outHdr = x.setClaimFields(x.outHdr)
	}
	// Lifetime: Target views x.target, and the other strings view the
	// client's request (the front end's buffer) or the exchange's own:
	// all valid until finish; the upstream client copies what it keeps
	// (bytesString).
	x.out = httpclient.Request{
		ResponseTimeout: x.rt.respTimeout, ConnectTimeout: x.rt.connectTimeout,
		Method: in.Method, Target: bytesString(target), Host: host, Header: x.outHdr,
		ContentLength: in.ContentLength, Ctx: in.Ctx, Trailer: in.Trailer, Cancel: &x.cancel,
		Client: in.RemoteAddr, Local: in.LocalAddr, // send_proxy's PROXY header
	}
	switch {
	case x.bufState == bufWhole:
		x.bufferedOut()
	case in.Body != nil && in.ContentLength != 0:
		var r io.Reader = in.Body
		if x.bufState == bufPartial {
			x.bodyRd = x.body.NewReader()
			r = io.MultiReader(&x.bodyRd, in.Body)
		}
		x.tap = &bodyTap{r: r, wd: &x.wd, gen: x.wd.gen(), limit: x.maxBody()}
		x.out.Body = x.tap
		x.wd.arm(x.tap.gen, phaseUpload)
	default:
		x.out.ContentLength = 0
	}
}

// localHost is the address the client connected to, as host:port.
func (x *exchange) localHost() string {
	if !x.in.LocalAddr.IsValid() {
		return ""
	}
	return x.in.LocalAddr.String()
}
