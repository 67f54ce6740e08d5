package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// RequireLoopbackHost serves only requests whose Host is exactly a
// loopback name or address, with an optional port of digits; a request
// with no Host (HTTP/1.0) or one that only starts like a loopback
// address is refused with 421.
func TestRequireLoopbackHostRefusesLookAlikes(t *testing.T) {
	h := RequireLoopbackHost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	for host, want := range map[string]int{
		"localhost":              http.StatusOK,
		"LOCALHOST:7777":         http.StatusOK,
		"localhost.":             http.StatusOK,
		"localhost.:7777":        http.StatusOK,
		"127.0.0.1":              http.StatusOK,
		"127.0.0.1:7777":         http.StatusOK,
		"127.0.0.2:80":           http.StatusOK,
		"[::1]":                  http.StatusOK,
		"[::1]:7777":             http.StatusOK,
		"":                       http.StatusMisdirectedRequest,
		"[::1].evil":             http.StatusMisdirectedRequest,
		"[::1].evil:7777":        http.StatusMisdirectedRequest,
		"[::1]evil":              http.StatusMisdirectedRequest,
		"[::1]:":                 http.StatusMisdirectedRequest,
		"[::1]:77x":              http.StatusMisdirectedRequest,
		"[[::1]]":                http.StatusMisdirectedRequest,
		"[::1":                   http.StatusMisdirectedRequest,
		"::1":                    http.StatusMisdirectedRequest,
		"[127.0.0.1]":            http.StatusMisdirectedRequest,
		"localhost:":             http.StatusMisdirectedRequest,
		"localhost:http":         http.StatusMisdirectedRequest,
		"localhost]":             http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example": http.StatusMisdirectedRequest,
		"evil.example:7777":      http.StatusMisdirectedRequest,
		"10.0.0.1":               http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d; want %d", host, w.Code, want)
		}
	}
}
