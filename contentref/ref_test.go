package contentref

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var script = []byte("export default (input) => ({ n: input.n + 1 });\n")

const validHex = "45320898c09a2603508f41018d80c77b10e12103d93cc2b473fef897b7f5dbc3"

func TestParseRef(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // "" means valid
	}{
		{name: "canonical", in: "sha256:" + validHex},
		{name: "all zero", in: "sha256:" + strings.Repeat("0", 64)},
		{name: "uppercase digest", in: "sha256:" + strings.ToUpper(validHex), wantErr: "lowercase hex"},
		{name: "one uppercase digit", in: "sha256:" + validHex[:63] + "C", wantErr: "offset 63"},
		{name: "uppercase algorithm", in: "SHA256:" + validHex, wantErr: `"sha256", in lowercase`},
		{name: "sha512", in: "sha512:" + validHex + validHex, wantErr: `unsupported algorithm "sha512"`},
		{name: "md5", in: "md5:d41d8cd98f00b204e9800998ecf8427e", wantErr: `unsupported algorithm "md5"`},
		{name: "too short", in: "sha256:" + validHex[:63], wantErr: "got 63 characters"},
		{name: "too long", in: "sha256:" + validHex + "0", wantErr: "got 65 characters"},
		{name: "leading space", in: " sha256:" + validHex, wantErr: "white space"},
		{name: "trailing newline", in: "sha256:" + validHex + "\n", wantErr: "white space"},
		{name: "tab only", in: "\t", wantErr: "white space"},
		{name: "path before colon", in: "./x:" + validHex, wantErr: `must start with "sha256:"`},
		{name: "inner space", in: "sha256:" + validHex[:10] + " " + validHex[11:], wantErr: "non-hex character ' ' at offset 10"},
		{name: "space after colon", in: "sha256: " + validHex[1:], wantErr: "non-hex"},
		{name: "empty", in: "", wantErr: `must start with "sha256:"`},
		{name: "prefix only", in: "sha256:", wantErr: "got 0 characters"},
		{name: "bare digest", in: validHex, wantErr: `must start with "sha256:"`},
		{name: "non-hex letter", in: "sha256:" + validHex[:5] + "g" + validHex[6:], wantErr: "non-hex character 'g' at offset 5"},
		{name: "object name form", in: "sha256/" + validHex, wantErr: `must start with "sha256:"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRef(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseRef(%q): %v", tt.in, err)
				}
				if r.String() != tt.in || r.IsZero() {
					t.Errorf("ParseRef(%q) = %s", tt.in, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseRef(%q) accepted it as %s", tt.in, r)
			}
			if !errors.Is(err, ErrInvalidRef) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRef(%q) = %v; want ErrInvalidRef saying %q", tt.in, err, tt.wantErr)
			}
			if !r.IsZero() {
				t.Errorf("a failed parse returned a non-zero Ref")
			}
		})
	}
}

func TestRefLayoutAndText(t *testing.T) {
	r := MustParseRef("sha256:" + validHex)
	if got := r.ObjectName("team/"); got != "team/sha256/"+validHex {
		t.Errorf("ObjectName = %q", got)
	}
	b, err := r.MarshalText()
	if err != nil || string(b) != r.String() {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
	var back Ref
	if err := back.UnmarshalText(b); err != nil || back != r {
		t.Errorf("UnmarshalText = %v, %v", back, err)
	}
	if _, err := (Ref{}).MarshalText(); !errors.Is(err, ErrInvalidRef) {
		t.Errorf("MarshalText of the zero Ref = %v", err)
	}
	if RefOf(nil).String() != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("RefOf(nil) = %s", RefOf(nil))
	}
	if !RefOf(script).Matches(script) || RefOf(script).Matches(script[1:]) || (Ref{}).Matches(nil) {
		t.Error("Matches")
	}
}

// FuzzParseRef checks that ParseRef accepts exactly the canonical forms:
// a string is accepted if and only if it survives a round trip through the
// standard library's hex codec unchanged, and then String returns it
// exactly. Seeds are in testdata/fuzz/FuzzParseRef.
func FuzzParseRef(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		canonical := false
		if h, ok := strings.CutPrefix(s, "sha256:"); ok {
			if sum, herr := hex.DecodeString(h); herr == nil && len(sum) == 32 && hex.EncodeToString(sum) == h {
				canonical = true
			}
		}
		if (err == nil) != canonical {
			t.Fatalf("ParseRef(%q) error %v, but canonical = %v", s, err, canonical)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("ParseRef(%q) = %v, not ErrInvalidRef", s, err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error message of %d bytes for a %d-byte input", len(err.Error()), len(s))
			}
			if !r.IsZero() {
				t.Fatalf("ParseRef(%q) failed but returned %v", s, r)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("ParseRef(%q).String() = %q", s, r.String())
		}
		if again, err := ParseRef(r.String()); err != nil || again != r {
			t.Fatalf("re-parse of %q = %v, %v", r.String(), again, err)
		}
		if r.ObjectName("") != "sha256/"+s[len("sha256:"):] {
			t.Fatalf("ObjectName = %q", r.ObjectName(""))
		}
	})
}
