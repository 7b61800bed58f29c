package stdhttp

import (
	"net/http"
	"strconv"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// validH2 applies the rules x/net leaves to the application: a method
// that is a token, an authority that is host[:port] (as the HTTP/1 front
// end requires of Host), and one content-length of digits that agrees
// with the body (RFC 9113 §8.1.1: a request whose content-length does
// not match its DATA is malformed; RFC 9110 §8.6: a list or differing
// values are refused, not guessed at). It returns the refusal reason of
// the first rule broken, or "".
func validH2(r *http.Request) string {
	if !httpsyntax.ValidToken(r.Method) {
		return httpmsg.ReasonInvalidMethod
	}
	if r.Host != "" && !http1.ValidAuthority(r.Host) {
		return httpmsg.ReasonInvalidHost
	}
	cl, ok := r.Header["Content-Length"]
	if !ok {
		return ""
	}
	if len(cl) != 1 || !digits(cl[0]) {
		return httpmsg.ReasonInvalidContentLength
	}
	// x/net parsed the value into ContentLength, or left it 0 when
	// HEADERS ended the stream: a body that cannot match is refused.
	if n, err := strconv.ParseInt(cl[0], 10, 64); err != nil || n != r.ContentLength {
		return httpmsg.ReasonInvalidContentLength
	}
	return ""
}

func digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
