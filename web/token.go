package web

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokenCookie is the cookie that carries the token after a request gave
// it as ?token=.
const tokenCookie = "reprise_token"

// RequireToken serves next only to requests that carry token: in an
// Authorization: Bearer header, in a token query parameter (the answer
// then sets a cookie, so that the browser need give it once, and sends
// the browser on to the same address without it), or in that cookie.
// Any other request is refused with 401. An empty token refuses all.
func RequireToken(token string, next http.Handler) http.Handler {
	same := func(got string) bool {
		return token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(auth) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		if q.Has("token") && same(q.Get("token")) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="reprise"`)
		http.Error(w, "this view needs its token: give ?token=TOKEN once, or an Authorization: Bearer header", http.StatusUnauthorized)
	})
}
