package handler

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string that keeps the engine's text
// exactly: QuickJS writes a lone surrogate (a JavaScript string may hold one)
// as its three-byte WTF-8 form, which encoding/json would turn into three
// U+FFFD. Here it becomes its \uXXXX escape, which any JSON parser reads back
// as the same JavaScript string. Any other byte that is not UTF-8 becomes
// U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c >= 0x20:
				dst = append(dst, c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		// WTF-8 surrogate: ED A0..BF 80..BF is U+D800..U+DFFF.
		if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			cp := 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			dst = append(dst, '\\', 'u')
			dst = strconv.AppendInt(dst, int64(cp), 16)
			i += 3
			continue
		}
		dst = append(dst, `\ufffd`...)
		i++
	}
	return append(dst, '"')
}
