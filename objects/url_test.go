package objects

import (
	"strings"
	"testing"
)

// A gs:// URL keeps its path as written (an object, or with a trailing
// slash a prefix only); a local path is cleaned.
func TestParse(t *testing.T) {
	for in, want := range map[string]struct {
		url    URL
		prefix string
	}{
		"gs://my-bucket":                   {URL{Bucket: "my-bucket"}, ""},
		"gs://my-bucket/":                  {URL{Bucket: "my-bucket"}, ""},
		"gs://my-bucket/in.ndjson":         {URL{Bucket: "my-bucket", Path: "in.ndjson"}, "in.ndjson/"},
		"gs://my-bucket/a/b/":              {URL{Bucket: "my-bucket", Path: "a/b/"}, "a/b/"},
		"GS://scripts.example.com/x":       {URL{Bucket: "scripts.example.com", Path: "x"}, "x/"},
		"file:///var/lib/scripts":          {URL{Path: "/var/lib/scripts"}, "/var/lib/scripts/"},
		"file://localhost/var/x/":          {URL{Path: "/var/x"}, "/var/x/"},
		"./results/":                       {URL{Path: "results"}, "results/"},
		`C:\results`:                       {URL{Path: `C:\results`}, `C:\results/`},
		"gs://my-bucket/" + "é/ü.ndjson":   {URL{Bucket: "my-bucket", Path: "é/ü.ndjson"}, "é/ü.ndjson/"},
		"gs://my-bucket/with space/x.json": {URL{Bucket: "my-bucket", Path: "with space/x.json"}, "with space/x.json/"},
	} {
		got, err := Parse(in)
		if err != nil || got != want.url || got.Prefix() != want.prefix {
			t.Errorf("Parse(%q) = %+v (prefix %q), %v; want %+v (prefix %q)", in, got, got.Prefix(), err, want.url, want.prefix)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                      `URL "": empty (want ` + Forms + ")",
		" gs://my-bucket":       "white space",
		"gs://":                 "missing bucket",
		"gs:my-bucket":          "with two slashes",
		"gs://in/x":             `bucket name "in" must be 3 to 63 characters`,
		"gs://My-Bucket/x":      `has 'M'`,
		"gs://-bucket":          "start and end with a letter or digit",
		"gs://my-bucket/a//b":   "empty path segment",
		"gs://my-bucket/a/../b": `".." segment`,
		"gs://my-bucket/a\x01":  "control character",
		"gs://my-bucket/" + strings.Repeat("p", 1025): "too long",
		"gs://my-bucket/x?y=1":                        "no query",
		"file:relative/dir":                           "must be absolute",
		"file://server/share":                         `host "server"`,
		"s3://bucket/x":                               `unsupported scheme "s3" (want ` + Forms + ")",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want it to say %q", in, err, want)
		}
	}
}
