package http1

import "errors"

// ErrIncomplete reports that the buffer does not yet hold a complete
// message head: read more bytes and call again with all of them.
var ErrIncomplete = errors.New("http1: incomplete message head")

// Error is a message the parser refuses. Status is what a server answers
// for it: 400, 417, 431 or 505 for a request head, 400 for chunked
// framing, 502 for a response head (the upstream's answer is unusable).
// The parser returns shared values: callers must not modify them.
type Error struct {
	Status int
	Reason string // a short lowercase phrase
}

func (e *Error) Error() string { return "http1: " + e.Reason }

// Is matches target when it is an *Error with the same Status and, unless
// target's Reason is empty, the same Reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Reason == "" || t.Reason == e.Reason)
}

// reason names one rule a message broke; the same rule maps to a request
// error (400) or a response error (502).
type reason uint8

const (
	rOK reason = iota
	rBareCR
	rBareLF
	rCtlByte
	rObsFold
	rSpaceInName
	rBadName
	rNoColon
	rRequestLine
	rMethod
	rTarget
	rVersion
	rStatusLine
	rPreface
	rContentLength
	rTransferEncoding
	rTEHTTP10
	rBothLengths
	rNoHost
	rManyHosts
	rBadHost
	rTooManyEmpty
	rChunkSize
	rChunkTooLarge
	rChunkData
	rChunkExt
	rTrailerTooLarge
	numReasons
)

var reasonText = [numReasons]string{
	rBareCR:           "bare CR",
	rBareLF:           "bare LF in chunked framing",
	rCtlByte:          "control byte in head",
	rObsFold:          "obsolete line folding",
	rSpaceInName:      "whitespace before colon",
	rBadName:          "invalid field name",
	rNoColon:          "field line without colon",
	rRequestLine:      "malformed request line",
	rMethod:           "invalid method",
	rTarget:           "invalid request target",
	rVersion:          "malformed HTTP version",
	rStatusLine:       "malformed status line",
	rPreface:          "HTTP/2 connection preface",
	rContentLength:    "invalid Content-Length",
	rTransferEncoding: "unsupported Transfer-Encoding",
	rTEHTTP10:         "Transfer-Encoding on HTTP/1.0",
	rBothLengths:      "both Content-Length and Transfer-Encoding",
	rNoHost:           "missing Host",
	rManyHosts:        "more than one Host",
	rBadHost:          "invalid Host",
	rTooManyEmpty:     "too many empty lines before request line",
	rChunkSize:        "malformed chunk-size line",
	rChunkTooLarge:    "chunk size too large",
	rChunkData:        "chunk data not followed by CRLF",
	rChunkExt:         "chunk extensions too long",
	rTrailerTooLarge:  "trailer section too large",
}

// reqErrs and respErrs hold one Error per reason, so that refusing a
// message allocates nothing.
var reqErrs, respErrs [numReasons]Error

func init() {
	for r := range numReasons {
		reqErrs[r] = Error{Status: 400, Reason: reasonText[r]}
		respErrs[r] = Error{Status: 502, Reason: reasonText[r]}
	}
}

// The request errors with a status other than 400.
var (
	// ErrHeadTooLarge: the head is longer than Limits.MaxHeaderBytes or
	// has more than Limits.MaxFields fields (RFC 6585 §5).
	ErrHeadTooLarge = &Error{Status: 431, Reason: "request head too large"}
	// ErrTargetTooLong: the request line alone does not end within
	// Limits.MaxHeaderBytes: its target is too long (RFC 9112 §3,
	// RFC 9110 §15.5.15).
	ErrTargetTooLong = &Error{Status: 414, Reason: "request target too long"}
	// ErrVersion: a well-formed HTTP-version other than 1.x (RFC 9110
	// §15.6.6), "PRI * HTTP/2.0" excepted.
	ErrVersion = &Error{Status: 505, Reason: "HTTP version not supported"}
	// ErrExpectation: an Expect field other than 100-continue (RFC 9110
	// §10.1.1), answered as net/http does.
	ErrExpectation = &Error{Status: 417, Reason: "unsupported expectation"}
	// ErrPreface: the request line is "PRI * HTTP/2.0", the start of the
	// HTTP/2 prior-knowledge preface (RFC 9113 §3.4). A server that allows
	// h2c checks for Preface before calling ParseRequest; seeing it here
	// means h2c is off (or it is not at the start of the connection), so
	// it is refused with 400.
	ErrPreface = &reqErrs[rPreface]
	// errRespTooLarge: a response head longer than the limit.
	errRespTooLarge = &Error{Status: 502, Reason: "response head too large"}
)

// Preface is the HTTP/2 client connection preface (RFC 9113 §3.4).
const Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func reqErr(r reason) error  { return &reqErrs[r] }
func respErr(r reason) error { return &respErrs[r] }
