// Package proxyproto reads the PROXY protocol header (versions 1 and 2,
// https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt) that a
// load balancer in front of edgeway sends before the client's bytes, and
// takes exactly the header off the socket, so that the next read returns
// the client's first byte. Its tradeoff: it peeks (recv with MSG_PEEK,
// package internal/peek) until the header is complete and then reads it,
// a second system call per connection, instead of reading into a buffer
// that would have to be handed on with the connection.
//
// # Why not github.com/pires/go-proxyproto
//
// go-proxyproto (v0.8.1, in go.mod) is well kept and edgeway uses its
// writer (HeaderProxyFromAddrs(...).Format()) for headers sent upstream.
// Its parser reads from a *bufio.Reader, which reads past the header, so
// on our socket its framing is unusable; we would frame the header
// ourselves and then parse the exact bytes a second time with it. That
// second parse costs 10 to 14 allocations and 0.5 to 0.7µs per header
// (a bufio.Reader and its buffer, the *Header, two *net.TCPAddr with
// their IP slices, TLV copies, binary.Read by reflection; measured
// against Parse's 0 or 1 allocation and 0.03 to 0.15µs), gives net.Addr
// where edgeway wants netip.AddrPort, and is laxer than the
// specification in places: it does not check the "PROXY " keyword's
// space, accepts extra v1 fields, signs and zone-qualified IPv6
// addresses, v2 family bytes outside the seven defined ones (0x10 yields
// nil addresses) and a wrong CRC32C, and refuses a v2 LOCAL header
// whose family it does not know, which the specification says to ignore
// (TestWhereGoProxyprotoDiffers lists each case). So Parse is our own, a
// few hundred lines with the framing included, allocation-free for
// headers without TLVs; FuzzParse checks it against go-proxyproto: any
// header Parse accepts, go-proxyproto accepts with the same addresses and
// TLVs, and any it accepts, Parse does not call incomplete or absent.
//
// # Cost
//
// Parse allocates nothing for a header without TLVs and one slice when
// there are TLVs (their values alias the input); see BenchmarkParse.
// Read adds the peek and the read, six small allocations (280 bytes;
// BenchmarkRead), and uses a pooled 256-byte buffer; a header with TLVs
// gets its own copy, as does one longer than 256 bytes.
package proxyproto
