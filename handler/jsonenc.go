package handler

import "github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"

// appendJSONString appends s, text the engine wrote (WTF-8: a JavaScript
// string may hold a lone surrogate), as the JSON string literal any JSON
// reader reads back as the same JavaScript string.
func appendJSONString(dst []byte, s string) []byte { return jsontext.AppendQuote(dst, s) }
