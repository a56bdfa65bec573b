package objects

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// URL is where a Place is: a GCS bucket and a path in it, or a local path.
type URL struct {
	// Bucket is the GCS bucket; "" for a local path.
	Bucket string
	// Path is, on GCS, the object name or prefix as written after
	// gs://bucket/ ("" for the whole bucket; a trailing "/" kept); for a
	// local path, the path cleaned (filepath.Clean).
	Path string
}

// GCS reports whether u names a place in a GCS bucket.
func (u URL) GCS() bool { return u.Bucket != "" }

// Prefix is u's path as a prefix of object names: "" or ending in "/".
func (u URL) Prefix() string {
	if u.Path == "" || strings.HasSuffix(u.Path, "/") {
		return u.Path
	}
	return u.Path + "/"
}

// String is u written as a URL: gs://bucket/path, or the local path.
func (u URL) String() string {
	if u.GCS() {
		return "gs://" + u.Bucket + "/" + u.Path
	}
	return u.Path
}

// Forms are the URLs Parse accepts, as a URLError about the form lists
// them.
const Forms = "gs://bucket/prefix, file:///path, or a directory path"

// URLError is the refusal of a URL: the URL, what is wrong with it, and,
// when the mistake is in its form rather than in one of its parts, the
// forms accepted. A program that accepts more forms (the script store's
// mem:) says Reason with its own list.
type URLError struct {
	URL, Reason string
	// Want is Forms where the URL is of no accepted form; else "".
	Want string
}

func (e *URLError) Error() string {
	msg := fmt.Sprintf("URL %q: %s", e.URL, e.Reason)
	if e.Want != "" {
		msg += " (want " + e.Want + ")"
	}
	return msg
}

// maxObjectName is the longest GCS object name, in bytes.
const maxObjectName = 1024

// Parse parses gs://bucket/path, file:///path or a plain local path, with
// a *URLError that says what is wrong and what is expected: a bucket name
// that GCS would refuse, a path with an empty, "." or ".." segment or a
// control character, a file URL with a host or a query.
func Parse(raw string) (URL, error) {
	fail := func(why string) (URL, error) {
		return URL{}, &URLError{URL: raw, Reason: why}
	}
	if raw == "" {
		return URL{}, &URLError{URL: raw, Reason: "empty", Want: Forms}
	}
	if strings.TrimSpace(raw) != raw {
		return fail("has leading or trailing white space")
	}
	scheme, rest, ok := SplitScheme(raw)
	if !ok {
		// A plain path. filepath.Clean keeps it relative if it was.
		return URL{Path: filepath.Clean(raw)}, nil
	}
	switch scheme {
	case "file":
		return parseFileURL(rest, fail)
	case "gs":
		return parseGSURL(rest, fail)
	default:
		return URL{}, &URLError{URL: raw, Reason: fmt.Sprintf("unsupported scheme %q", scheme), Want: Forms}
	}
}

// SplitScheme splits "scheme:rest" when raw starts with an RFC 3986
// scheme of two characters or more (so that a Windows drive letter is a
// path), and lower-cases it.
func SplitScheme(raw string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(raw, ':')
	if i < 2 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := raw[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", "", false
		}
	}
	return strings.ToLower(raw[:i]), raw[i+1:], true
}

func parseFileURL(rest string, fail func(string) (URL, error)) (URL, error) {
	if !strings.HasPrefix(rest, "//") {
		return fail("a file URL must be absolute: file:///path (or give a plain path)")
	}
	rest = rest[2:]
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return fail("a file URL needs a path: file:///path")
	}
	if host := rest[:slash]; host != "" && host != "localhost" {
		return fail(fmt.Sprintf("file URLs name a local path; host %q is not supported", host))
	}
	p := rest[slash:]
	if strings.ContainsAny(p, "?#%") {
		return fail("a file URL takes no query, fragment or percent-escapes; give a plain path instead")
	}
	return URL{Path: filepath.Clean(p)}, nil
}

func parseGSURL(rest string, fail func(string) (URL, error)) (URL, error) {
	if !strings.HasPrefix(rest, "//") {
		return fail(`a gs URL is written gs://bucket or gs://bucket/prefix, with two slashes`)
	}
	rest = rest[2:]
	if strings.ContainsAny(rest, "?#") {
		return fail("a gs URL takes no query or fragment")
	}
	bucket, p, _ := strings.Cut(rest, "/")
	if err := validBucketName(bucket); err != nil {
		return fail(err.Error())
	}
	if p != "" {
		if strings.Contains(p, "//") || strings.HasPrefix(p, "/") {
			return fail("the path has an empty path segment (\"//\")")
		}
		for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
			if seg == "." || seg == ".." {
				return fail(fmt.Sprintf("the path has a %q segment", seg))
			}
		}
		if len(p) > maxObjectName {
			return fail(fmt.Sprintf("the path is too long for a GCS object name (%d bytes)", maxObjectName))
		}
		if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fail("the path has a control character")
		}
	}
	return URL{Bucket: bucket, Path: p}, nil
}

// validBucketName applies the GCS bucket naming rules that a typo is likely
// to break.
func validBucketName(b string) error {
	if b == "" {
		return errors.New("missing bucket name")
	}
	maxLen := 63
	if strings.Contains(b, ".") {
		maxLen = 222
	}
	if len(b) < 3 || len(b) > maxLen {
		return fmt.Errorf("bucket name %q must be 3 to %d characters", b, maxLen)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("bucket name %q has %q: only lowercase letters, digits, '-', '_' and '.' are allowed", b, c)
		}
		if (i == 0 || i == len(b)-1) && !alnum {
			return fmt.Errorf("bucket name %q must start and end with a letter or digit", b)
		}
	}
	return nil
}
