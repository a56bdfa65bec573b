package auth_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/auth"
)

const (
	audience = "https://sandbox-abc123-ew.a.run.app"
	caller   = "loom-worker@project.iam.gserviceaccount.com"
	kid      = "test-key-1"
)

// keys are made once: RSA key generation is the slow part of these tests.
var keys = sync.OnceValue(func() [2]*rsa.PrivateKey {
	var k [2]*rsa.PrivateKey
	for i := range k {
		var err error
		if k[i], err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	}
	return k
})

// signJWT builds a JWT by hand: base64url(header).base64url(claims), signed
// with RS256 (RSASSA-PKCS1-v1_5 over SHA-256).
func signJWT(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(header) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func header() map[string]any { return map[string]any{"alg": "RS256", "kid": kid, "typ": "JWT"} }

// claims are a valid Google ID token's for the allowed caller.
func claims() map[string]any {
	now := time.Now().Unix()
	return map[string]any{
		"iss": "https://accounts.google.com", "aud": audience, "azp": "1234567890",
		"sub": "1234567890", "email": caller, "email_verified": true,
		"iat": now, "exp": now + 3600,
	}
}

// keyServer serves a JWK set with the public half of keys()[0] under kid.
type keyServer struct {
	*httptest.Server
	fetches atomic.Int32
	paths   sync.Map // path → true
	status  atomic.Int32
}

func newKeyServer(t *testing.T) *keyServer {
	t.Helper()
	pub := keys()[0].PublicKey
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
	ks := &keyServer{}
	ks.status.Store(http.StatusOK)
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		ks.paths.Store(r.URL.Path, true)
		if s := int(ks.status.Load()); s != http.StatusOK {
			http.Error(w, "unavailable", s)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(ks.Close)
	return ks
}

// redirect sends every request, whatever its URL (Google's key endpoints),
// to the loopback key server, so that nothing leaves the machine.
type redirect struct{ to *url.URL }

func (rt redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rt.to.Scheme, rt.to.Host, rt.to.Host
	return http.DefaultTransport.RoundTrip(r)
}

func newVerifier(t *testing.T, ks *keyServer, allowed ...string) *auth.Verifier {
	t.Helper()
	if allowed == nil {
		allowed = []string{"someone-else@example.com", strings.ToUpper(caller)}
	}
	to, _ := url.Parse(ks.URL)
	v, err := auth.NewVerifier(context.Background(), audience, allowed,
		auth.WithHTTPClient(&http.Client{Transport: redirect{to}, Timeout: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func request(authorization ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/evaluations", nil)
	for _, a := range authorization {
		r.Header.Add("Authorization", a)
	}
	return r
}

func TestVerifyAllowedCaller(t *testing.T) {
	ks := newKeyServer(t)
	v := newVerifier(t, ks)
	for _, scheme := range []string{"Bearer", "bearer"} {
		token := signJWT(t, keys()[0], header(), claims())
		got, err := v.Verify(request(scheme + " " + token))
		if err != nil || got != caller {
			t.Errorf("%s: Verify = %q, %v; want %q", scheme, got, err, caller)
		}
	}
	c := claims()
	c["iss"] = "accounts.google.com" // the other form Google uses
	if _, err := v.Verify(request("Bearer " + signJWT(t, keys()[0], header(), c))); err != nil {
		t.Errorf("iss accounts.google.com: %v", err)
	}
	if n := ks.fetches.Load(); n != 1 {
		t.Errorf("the keys were fetched %d times, want once (cached for their max-age)", n)
	}
	if _, ok := ks.paths.Load("/oauth2/v3/certs"); !ok {
		t.Errorf("the keys were not fetched from Google's ID token key path")
	}
}

func TestVerifyRefuses(t *testing.T) {
	ks := newKeyServer(t)
	v := newVerifier(t, ks)
	good, wrong := keys()[0], keys()[1]
	with := func(change func(h, c map[string]any)) string {
		h, c := header(), claims()
		change(h, c)
		return "Bearer " + signJWT(t, good, h, c)
	}
	valid := signJWT(t, good, header(), claims())
	parts := strings.Split(valid, ".")
	tampered := func() string {
		c := claims()
		c["email"] = "intruder@example.com"
		b, _ := json.Marshal(c)
		return "Bearer " + parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
	}()

	for _, tc := range []struct {
		name     string
		auth     []string
		want     error
		fragment string
	}{
		{"missing header", nil, auth.ErrUnauthenticated, "no Authorization header"},
		{"basic scheme", []string{"Basic dXNlcjpwYXNz"}, auth.ErrUnauthenticated, "scheme must be Bearer"},
		{"token without scheme", []string{valid}, auth.ErrUnauthenticated, "scheme must be Bearer"},
		{"empty bearer", []string{"Bearer "}, auth.ErrUnauthenticated, "empty"},
		{"two tokens", []string{"Bearer " + valid + " " + valid}, auth.ErrUnauthenticated, "not a JWT"},
		{"two headers", []string{"Bearer " + valid, "Bearer " + valid}, auth.ErrUnauthenticated, "more than one"},
		{"not a JWT", []string{"Bearer abc.def"}, auth.ErrUnauthenticated, "not a JWT"},
		{"oversized", []string{"Bearer " + strings.Repeat("a", 9<<10) + ".b.c"}, auth.ErrUnauthenticated, "over"},
		{"wrong audience", []string{with(func(h, c map[string]any) { c["aud"] = "https://other.a.run.app" })}, auth.ErrUnauthenticated, "audience"},
		{"audience list", []string{with(func(h, c map[string]any) { c["aud"] = []string{audience} })}, auth.ErrUnauthenticated, ""},
		{"expired", []string{with(func(h, c map[string]any) {
			c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
			c["exp"] = time.Now().Add(-time.Hour).Unix()
		})}, auth.ErrUnauthenticated, "expired"},
		{"issued in the future", []string{with(func(h, c map[string]any) {
			c["iat"] = time.Now().Add(time.Hour).Unix()
			c["exp"] = time.Now().Add(2 * time.Hour).Unix()
		})}, auth.ErrUnauthenticated, "in the future"},
		{"bad signature", []string{"Bearer " + signJWT(t, wrong, header(), claims())}, auth.ErrUnauthenticated, "verification error"},
		{"tampered claims", []string{tampered}, auth.ErrUnauthenticated, "verification error"},
		{"unknown kid", []string{with(func(h, c map[string]any) { h["kid"] = "rotated-away" })}, auth.ErrUnauthenticated, "matching cert"},
		{"alg none", []string{"Bearer " + base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+kid+`"}`)) + "." + parts[1] + "."}, auth.ErrUnauthenticated, ""},
		{"alg HS256", []string{with(func(h, c map[string]any) { h["alg"] = "HS256" })}, auth.ErrUnauthenticated, "RS256"},
		{"other issuer", []string{with(func(h, c map[string]any) { c["iss"] = "https://securetoken.google.com/project" })}, auth.ErrUnauthenticated, "issuer"},
		{"no email", []string{with(func(h, c map[string]any) { delete(c, "email") })}, auth.ErrUnauthenticated, "no email"},
		{"email not verified", []string{with(func(h, c map[string]any) { c["email_verified"] = false })}, auth.ErrUnauthenticated, "not verified"},
		{"email_verified missing", []string{with(func(h, c map[string]any) { delete(c, "email_verified") })}, auth.ErrUnauthenticated, "not verified"},
		{"email_verified as a string", []string{with(func(h, c map[string]any) { c["email_verified"] = "true" })}, auth.ErrUnauthenticated, "not verified"},
		{"not allowed", []string{with(func(h, c map[string]any) { c["email"] = "intruder@example.com" })}, auth.ErrForbidden, "intruder@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			principal, err := v.Verify(request(tc.auth...))
			if !errors.Is(err, tc.want) || principal != "" {
				t.Fatalf("Verify = %q, %v; want %v", principal, err, tc.want)
			}
			other := auth.ErrForbidden
			if tc.want == auth.ErrForbidden {
				other = auth.ErrUnauthenticated
			}
			if errors.Is(err, other) || errors.Is(err, auth.ErrUnavailable) {
				t.Errorf("%v also matches another sentinel", err)
			}
			if !strings.Contains(err.Error(), tc.fragment) {
				t.Errorf("error %q lacks %q", err, tc.fragment)
			}
			for _, a := range tc.auth {
				tok := strings.TrimPrefix(a, "Bearer ")
				for _, seg := range append(strings.Split(tok, "."), tok) {
					if len(seg) >= 16 && strings.Contains(err.Error(), seg) {
						t.Errorf("the error repeats the token: %q", err)
					}
				}
			}
		})
	}
}

func TestVerifyKeysUnavailable(t *testing.T) {
	ks := newKeyServer(t)
	ks.status.Store(http.StatusServiceUnavailable)
	v := newVerifier(t, ks)
	token := signJWT(t, keys()[0], header(), claims())
	_, err := v.Verify(request("Bearer " + token))
	if !errors.Is(err, auth.ErrUnavailable) || errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("Verify with the key endpoint down = %v; want ErrUnavailable only", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error repeats the token")
	}
	// A failed fetch is not cached: once the keys are back, the caller is in.
	ks.status.Store(http.StatusOK)
	if got, err := v.Verify(request("Bearer " + token)); err != nil || got != caller {
		t.Errorf("after the keys came back: %q, %v", got, err)
	}

	ks.Close() // nothing listens
	v2 := newVerifier(t, ks)
	if _, err := v2.Verify(request("Bearer " + token)); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("Verify with no key server = %v; want ErrUnavailable", err)
	}
}

func TestNewVerifierRequiresAudienceAndAllowList(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		audience string
		allowed  []string
		fragment string
	}{
		{"no audience", "", []string{caller}, "audience is required"},
		{"no allow-list", audience, nil, "allow-list of caller emails is required"},
		{"empty allow-list", audience, []string{}, "allow-list of caller emails is required"},
		{"not an email", audience, []string{caller, "serviceAccount"}, `"serviceAccount" is not an email`},
		{"two emails in one", audience, []string{"a@b.c,d@e.f"}, "is not an email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := auth.NewVerifier(ctx, tc.audience, tc.allowed)
			if err == nil || v != nil {
				t.Fatalf("NewVerifier accepted it")
			}
			if !strings.Contains(err.Error(), tc.fragment) {
				t.Errorf("error %q lacks %q", err, tc.fragment)
			}
		})
	}
}
