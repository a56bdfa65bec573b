// Package auth verifies the Google-signed ID token on a request to the
// service: defence in depth behind Cloud Run's own IAM check.
//
// A Verifier accepts a request only when its "Authorization: Bearer" token is
// an ID token that Google signed (the signature checked against Google's
// published keys), that has not expired, that was issued for the service's
// audience by accounts.google.com, and whose email is verified and on the
// allow-list. The principal is that email. Signature, expiry and audience are
// checked by google.golang.org/api/idtoken; the rest here.
//
// Errors wrap ErrUnauthenticated (no usable credentials: 401), ErrForbidden
// (a verified caller who is not allowed: 403) or ErrUnavailable (Google's keys
// could not be fetched, so nothing was decided: 503, retryable). Their text
// never holds the token, so it may be sent back as a problem's detail.
package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"
)

// Errors of Verify, tested with errors.Is.
var (
	ErrUnauthenticated = errors.New("auth: unauthenticated")
	ErrForbidden       = errors.New("auth: forbidden")
	ErrUnavailable     = errors.New("auth: Google's token signing keys are unavailable")
)

// Bounds on what a caller or the key endpoint controls.
const (
	// maxTokenBytes is far above a Google ID token (about 1 KiB).
	maxTokenBytes = 8 << 10
	// maxKeysBytes bounds the JWK set read from Google.
	maxKeysBytes = 1 << 20
	// clockSkew is how far in the future a token's iat may be.
	clockSkew = 5 * time.Minute
	// keyFetchTimeout bounds one fetch of Google's keys.
	keyFetchTimeout = 10 * time.Second
)

// googleIssuers are the iss values of Google-signed ID tokens.
var googleIssuers = map[string]bool{"accounts.google.com": true, "https://accounts.google.com": true}

// Option configures a Verifier.
type Option func(*config)

type config struct{ hc *http.Client }

// WithHTTPClient fetches Google's signing keys through hc (its Transport and
// Timeout; the default is a client with its own transport and a 10 s
// timeout). Tests use it to serve their own keys from a loopback server.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.hc = hc } }

// Verifier checks ID tokens for one audience against one allow-list. It is
// safe for concurrent use; Google's keys are cached as their Cache-Control
// allows.
type Verifier struct {
	audience  string
	allowed   map[string]bool
	validator *idtoken.Validator
}

// NewVerifier returns a Verifier for tokens issued for audience (the service's
// URL, which callers name when they request their token) from callers whose
// email is in allowed (compared without regard to case). Both are required:
// with authentication on, an empty allow-list would admit any Google account
// with a verified email. It fetches nothing until the first Verify.
func NewVerifier(ctx context.Context, audience string, allowed []string, opts ...Option) (*Verifier, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var problems []error
	if strings.TrimSpace(audience) == "" {
		problems = append(problems, errors.New("auth: an audience is required (the service's URL, for which callers request their ID tokens)"))
	}
	if len(allowed) == 0 {
		problems = append(problems, errors.New("auth: an allow-list of caller emails is required when authentication is on; an empty list would admit any Google account with a verified email"))
	}
	set := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		e := strings.ToLower(strings.TrimSpace(a))
		if !plausibleEmail(e) {
			problems = append(problems, fmt.Errorf("auth: allow-list entry %q is not an email address (for example sa@project.iam.gserviceaccount.com)", a))
			continue
		}
		set[e] = true
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: base, Timeout: keyFetchTimeout}
	if cfg.hc != nil {
		c := *cfg.hc
		hc = &c
		if hc.Transport == nil {
			hc.Transport = base
		}
	}
	hc.Transport = keysTransport{base: hc.Transport}
	v, err := idtoken.NewValidator(ctx, option.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return &Verifier{audience: audience, allowed: set, validator: v}, nil
}

func plausibleEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	return at > 0 && at == strings.LastIndexByte(s, '@') && at < len(s)-1 && len(s) <= 320 &&
		!strings.ContainsAny(s, " \t\r\n,;:<>\"")
}

// Verify checks the request's ID token and returns the caller's email. It
// reads only the Authorization header and uses r's context for a key fetch.
func (v *Verifier) Verify(r *http.Request) (principal string, err error) {
	token, err := bearer(r.Header)
	if err != nil {
		return "", err
	}
	payload, err := v.validator.Validate(r.Context(), token, v.audience)
	if err != nil {
		var u *unavailableError
		if errors.As(err, &u) {
			return "", fmt.Errorf("%w: %v", ErrUnavailable, u.err)
		}
		return "", fmt.Errorf("%w: %s", ErrUnauthenticated, redact(err.Error(), token))
	}
	if !googleIssuers[payload.Issuer] {
		return "", fmt.Errorf("%w: the token's issuer %q is not accounts.google.com", ErrUnauthenticated, clip(payload.Issuer))
	}
	if payload.IssuedAt == 0 || time.Unix(payload.IssuedAt, 0).After(time.Now().Add(clockSkew)) {
		return "", fmt.Errorf("%w: the token's issue time is missing or in the future", ErrUnauthenticated)
	}
	email, _ := payload.Claims["email"].(string)
	if email == "" {
		return "", fmt.Errorf("%w: the token carries no email (request it with the email included)", ErrUnauthenticated)
	}
	if verified, _ := payload.Claims["email_verified"].(bool); !verified {
		return "", fmt.Errorf("%w: the token's email is not verified", ErrUnauthenticated)
	}
	if !v.allowed[strings.ToLower(email)] {
		return "", fmt.Errorf("%w: caller %q is not on the allow-list", ErrForbidden, clip(email))
	}
	return email, nil
}

// bearer returns the token of the one Authorization header, which must use
// the Bearer scheme (RFC 6750; the scheme is case-insensitive).
func bearer(h http.Header) (string, error) {
	values := h.Values("Authorization")
	switch len(values) {
	case 0:
		return "", fmt.Errorf("%w: no Authorization header; send \"Authorization: Bearer <Google ID token>\"", ErrUnauthenticated)
	case 1:
	default:
		return "", fmt.Errorf("%w: more than one Authorization header", ErrUnauthenticated)
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: the Authorization scheme must be Bearer", ErrUnauthenticated)
	}
	token = strings.Trim(token, " ")
	switch {
	case token == "":
		return "", fmt.Errorf("%w: the Bearer token is empty", ErrUnauthenticated)
	case len(token) > maxTokenBytes:
		return "", fmt.Errorf("%w: the Bearer token is over %d bytes", ErrUnauthenticated, maxTokenBytes)
	case strings.Count(token, ".") != 2 || strings.ContainsFunc(token, notBase64URL):
		return "", fmt.Errorf("%w: the Bearer token is not a JWT", ErrUnauthenticated)
	}
	return token, nil
}

func notBase64URL(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
}

// redact removes the token, and each of its segments, from text that came
// from the validator.
func redact(s, token string) string {
	s = strings.ReplaceAll(s, token, "[token]")
	for _, seg := range strings.Split(token, ".") {
		if len(seg) >= 8 {
			s = strings.ReplaceAll(s, seg, "[token]")
		}
	}
	return clip(s)
}

// clip bounds text from a token or the validator for an error message.
func clip(s string) string {
	const max = 256
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

// unavailableError marks a failure to fetch Google's keys, as opposed to a
// token that does not verify. The validator passes the transport's error up
// through the HTTP client, so errors.As finds it.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }

// keysTransport turns every failure to get a usable JWK set (no response, a
// status other than 200, an oversized or malformed body) into an
// unavailableError, and bounds the body it hands on.
type keysTransport struct{ base http.RoundTripper }

func (t keysTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, &unavailableError{err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, &unavailableError{fmt.Errorf("GET %s: HTTP %d", req.URL.Redacted(), res.StatusCode)}
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxKeysBytes+1))
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)}
	}
	if len(data) > maxKeysBytes {
		return nil, &unavailableError{fmt.Errorf("GET %s: the key set is over %d bytes", req.URL.Redacted(), maxKeysBytes)}
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil || len(set.Keys) == 0 {
		return nil, &unavailableError{fmt.Errorf("GET %s: the answer is not a JWK set", req.URL.Redacted())}
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	res.ContentLength = int64(len(data))
	return res, nil
}
