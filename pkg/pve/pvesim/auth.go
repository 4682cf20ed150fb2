package pvesim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Authentication as pve-manager PVE/HTTPServer.pm auth_handler does it for
// API tokens (AccessControl.pm verify_token): the header
// "PVEAPIToken=user@realm!name=SECRET" names a token of an enabled,
// unexpired user; the token must exist, be unexpired and have that
// secret. The token id is then the request's user. Every token
// authenticates this way: the configured ones (Options) and the ones
// created through the API (their secret is answered once, at create).

// authFailureDelay is how long pveproxy holds back a 401 (AnyEvent.pm:
// "always delay unauthorized calls by 3 seconds").
const authFailureDelay = 3 * time.Second

// Token is an API token the simulator is started with.
type Token struct {
	ID     string // user@realm!name
	Secret string
}

// secretHash is what the state keeps of a token's secret: its SHA-256,
// so that a state file never holds a usable secret.
func secretHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// The values pve-http-server Formatter.pm extract_auth_value finds: after
// "KEY=" (or "KEY ") at the start of a header or after a blank.
var (
	tokenValueRe  = lazyre.New(`(?:^|\s)PVEAPIToken(?:=| )([^;]*)`)
	ticketValueRe = lazyre.New(`(?:^|\s)PVEAuthCookie(?:=| )([^;]*)`)
)

func authValue(header string, re *lazyre.Regexp) string {
	m := re.FindStringSubmatch(header)
	if m == nil {
		return ""
	}
	v, err := url.QueryUnescape(m[1])
	if err != nil {
		return m[1]
	}
	return v
}

// authenticate returns the request's token id, or the reason pveproxy
// puts in its 401 status line: "No ticket" when nothing identifies the
// caller, "Authentication failed!" for a token (or a ticket: the
// simulator issues none) that does not pass.
func (s *Server) authenticate(r *http.Request) (id, reason string) {
	const failed = "Authentication failed!"
	auth := r.Header.Get("Authorization")
	if authValue(r.Header.Get("Cookie"), ticketValueRe) != "" || authValue(auth, ticketValueRe) != "" {
		return "", failed
	}
	tok := authValue(auth, tokenValueRe)
	if tok == "" {
		return "", "No ticket"
	}
	// verify_token splits at the last "=" (^(.*)=(.*)$).
	i := strings.LastIndex(tok, "=")
	if i < 0 {
		return "", failed
	}
	id, secret := tok[:i], tok[i+1:]
	uid, name, ok := splitTokenID(id)
	if !ok {
		return "", failed
	}
	now := time.Now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.st.Access.Users[uid]
	if u == nil || !u.Enable || u.Expire != 0 && u.Expire < now {
		return "", failed
	}
	t := u.Tokens[name]
	if t == nil || t.Expire != 0 && t.Expire < now || t.SecretHash == "" ||
		subtle.ConstantTimeCompare([]byte(t.SecretHash), []byte(secretHash(secret))) != 1 {
		return "", failed
	}
	return id, ""
}

// unauthorized answers a 401 as pveproxy does: after its delay, with the
// reason in the status line, no body, and the connection closed.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, reason string) int {
	delay := s.opts.AuthFailureDelay
	if delay == 0 {
		delay = authFailureDelay
	}
	if delay > 0 && !sleepCtx(r.Context(), delay) {
		return 0
	}
	return writeAnswer(w, r, http.StatusUnauthorized, reason, nil)
}

// ensureToken makes sure a configured token exists with its secret. An
// admin token (Options.TokenID) is a token of its user without privilege
// separation, and a user other than root@pam that the simulator creates
// for it gets Administrator on /; Options.Tokens are privilege-separated
// tokens whose users it creates without any ACL. A token kept in a state
// file keeps its settings; its secret is the configured one.
func (a *access) ensureToken(tk Token, admin bool) {
	uid, name, _ := splitTokenID(tk.ID)
	u, ok := a.Users[uid]
	if !ok {
		u = &user{ID: uid, Enable: true}
		a.Users[uid] = u
		if admin && uid != superuser {
			a.ACL = append(a.ACL, aclEntry{Path: "/", Type: "user", UGID: uid, Role: "Administrator", Propagate: true})
		}
	}
	ensureMap(&u.Tokens)
	t, ok := u.Tokens[name]
	if !ok {
		t = &token{Comment: "pvectl simulator token", Privsep: !admin}
		u.Tokens[name] = t
	}
	t.SecretHash = secretHash(tk.Secret)
}
