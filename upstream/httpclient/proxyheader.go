package httpclient

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	proxyproto "github.com/pires/go-proxyproto"
)

// WriteProxyHeader writes a PROXY protocol header (haproxy's
// proxy-protocol.txt) of version "v1" (text) or "v2" (binary) to w: the
// connection it starts speaks for client, which connected to local. A
// client or local address that is not valid, or addresses of two
// families, cannot be told: the header then says so (v1 "PROXY UNKNOWN",
// v2 the LOCAL command), and the server uses the connection's own
// addresses. It is the header every new connection of a pool with
// send_proxy starts with; TCP routes can use it for theirs.
func WriteProxyHeader(w io.Writer, version string, client, local netip.AddrPort) error {
	v, err := proxyVersion(version)
	if err != nil {
		return err
	}
	if v == 0 {
		return nil
	}
	b, err := proxyHeader(v, client, local)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing the PROXY header: %w", err)
	}
	return nil
}

// proxyVersion maps conf.Upstream.SendProxy to a header version; 0 is
// none.
func proxyVersion(s string) (byte, error) {
	switch s {
	case "":
		return 0, nil
	case "v1":
		return 1, nil
	case "v2":
		return 2, nil
	}
	return 0, fmt.Errorf("PROXY protocol version %q: want v1 or v2", s)
}

// proxyHeader formats the header of version v (1 or 2).
func proxyHeader(v byte, client, local netip.AddrPort) ([]byte, error) {
	src, dst := client.Addr().Unmap(), local.Addr().Unmap()
	var h *proxyproto.Header
	if client.IsValid() && local.IsValid() && src.Is4() == dst.Is4() {
		h = proxyproto.HeaderProxyFromAddrs(v,
			&net.TCPAddr{IP: src.AsSlice(), Port: int(client.Port())},
			&net.TCPAddr{IP: dst.AsSlice(), Port: int(local.Port())})
	} else {
		h = &proxyproto.Header{Version: v, Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}
	}
	b, err := h.Format()
	if err != nil {
		return nil, fmt.Errorf("formatting the PROXY header: %w", err)
	}
	return b, nil
}
