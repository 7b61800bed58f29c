package router

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// remoteUserHeader carries the authenticated user upstream; a client's
// own copy is always removed on a route with basic_auth.
const remoteUserHeader = "X-Remote-User"

// basicAuth is a route's `basic_auth`, compiled at load time. bcrypt is
// slow by design (tens of ms a check), so a verified user, password and
// hash are remembered for a while as a digest, never the password.
type basicAuth struct {
	users     map[string]string // user -> bcrypt hash
	challenge string            // WWW-Authenticate value
	verified  *grantCache[struct{}]
}

const (
	authCacheTTL = 5 * time.Minute
	authCacheMax = 4096
)

func compileBasicAuth(a *conf.BasicAuth) *basicAuth {
	if a == nil {
		return nil
	}
	return &basicAuth{users: a.Users, verified: newGrantCache[struct{}](authCacheMax),
		challenge: `Basic realm="` + a.Realm + `", charset="UTF-8"`}
}

// check reports the user of a request's credentials, "" when they are
// missing or wrong.
func (a *basicAuth) check(h httpmsg.Header, scratch []byte) (string, []byte) {
	v := h.Get("Authorization")
	if len(v) < 6 || !strings.EqualFold(v[:6], "basic ") {
		return "", scratch
	}
	enc := strings.TrimSpace(v[6:])
	if base64.StdEncoding.DecodedLen(len(enc)) > 1024 {
		return "", scratch
	}
	need := base64.StdEncoding.DecodedLen(len(enc))
	if cap(scratch) < need {
		scratch = make([]byte, need)
	}
	buf := scratch[:need]
	n, err := base64.StdEncoding.Decode(buf, []byte(enc))
	if err != nil {
		return "", buf
	}
	user, pass, ok := strings.Cut(string(buf[:n]), ":")
	hash, known := a.users[user]
	if !ok || !known {
		return "", buf
	}
	d := sha256.Sum256([]byte(user + "\x00" + pass + "\x00" + hash))
	now := time.Now()
	if _, hit := a.verified.get(d, now); hit {
		return user, buf
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) != nil {
		return "", buf
	}
	a.verified.put(d, struct{}{}, now.Add(authCacheTTL))
	return user, buf
}

// authenticate runs the route's basic_auth: a request without a known
// user's credentials gets 401 with the challenge. It reports whether the
// request was answered.
func (x *exchange) authenticate() bool {
	user, buf := x.rt.auth.check(x.in.Header, x.buf)
	x.buf = buf[:0]
	if user == "" {
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: x.rt.auth.challenge})
		return true
	}
	x.authUser = user
	return false
}

// setRemoteUser replaces the credentials in the outbound fields h with
// the user they name.
func (x *exchange) setRemoteUser(h httpmsg.Header) httpmsg.Header {
	out := h[:0]
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Authorization") && !httpmsg.EqualFold(f.Name, remoteUserHeader) {
			out = append(out, f)
		}
	}
	return append(out, httpmsg.Field{Name: remoteUserHeader, Value: x.authUser})
}
