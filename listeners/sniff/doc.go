// Package sniff reads a TLS ClientHello's server name (SNI) and ALPN
// protocols from the first bytes of a connection without consuming them,
// so that the engine can either pass the untouched stream through to an
// upstream chosen by SNI, or let crypto/tls do the handshake reading from
// the socket itself. Its tradeoff: it parses only the record framing, the
// fixed fields and the extensions it reports (server_name, ALPN,
// supported_versions, and the presence of encrypted_client_hello), and
// checks only the framing of the others; a hello it accepts may still be
// refused by crypto/tls.
//
// # Bounds
//
// A ClientHello whose records take more than MaxHelloBytes (16 KiB, as
// sent) is refused with ErrTooLarge, as soon as its declared lengths say
// so. Today's largest hellos, with a post-quantum X25519MLKEM768 key
// share, are about 1.8 KB. Nothing is allocated from a declared length
// before the bytes are there: a hello in one record (what every
// mainstream client sends) is parsed in place; one fragmented over
// several records (RFC 8446 §5.1 allows it) is copied once into a buffer
// of its actual size.
//
// # Cost
//
// Parse of a typical hello with SNI and ALPN h2, http/1.1 allocates twice
// (the SNI string and the ALPN slice; common protocol names are interned)
// and takes about half a microsecond; see BenchmarkParse. Peek adds the
// peeks (one recv(2) per wake-up, usually one) and four small allocations
// (about 150 bytes; BenchmarkPeek); its buffer is the caller's.
package sniff
