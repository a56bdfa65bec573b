package quickjs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// An instance is reset after a run, not rebuilt (memImage.reset), and that
// makes each run fresh only if the linear memory is the instance's whole
// state between calls. Two facts of the module make it so, and this test
// holds both for every committed build, production and checked: the module
// has exactly one mutable global (the shadow stack's pointer, which reset
// checks is back at the stack's top) and imports none, and no instruction
// of its code changes an instance's state outside its memory: no table
// write (table.set, table.grow, table.fill, table.init, table.copy), no
// elem.drop, no data.drop. A rebuild that adds a mutable global (a C
// global made thread-local, say) or a table write (a toolchain that grows
// the table for dlopen-style code) fails here, before reset could carry
// state from one run into the next.
func TestModuleStateIsItsMemory(t *testing.T) {
	for _, file := range []string{"sandbox.wasm", "sandbox-checked.wasm"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			st, err := moduleState(b)
			if err != nil {
				t.Fatal(err)
			}
			if st.mutableGlobals != 1 || st.importedGlobals != 0 {
				t.Errorf("%s has %d mutable globals and imports %d; reset relies on exactly one (the stack pointer) and none imported",
					file, st.mutableGlobals, st.importedGlobals)
			}
			for _, w := range st.stateWrites {
				t.Errorf("%s: %s", file, w)
			}
			if st.functions < 500 {
				t.Errorf("%s: %d function bodies decoded; the code section was not read whole", file, st.functions)
			}
		})
	}
}

// The check above fails when either fact breaks: a second mutable global,
// an imported one, and each instruction that writes state outside memory,
// in modules made for the purpose; and the decoder follows every kind of
// immediate the module's code has, so that an instruction after one is
// still seen.
func TestModuleStateCheckFails(t *testing.T) {
	// a module of one function, type () -> (), with the given globals
	// and body (locals and expression, without the trailing end)
	module := func(imports, globals []byte, body ...byte) []byte {
		m := []byte("\x00asm\x01\x00\x00\x00")
		m = append(m, section(1, []byte{1, 0x60, 0, 0})...)
		if imports != nil {
			m = append(m, section(2, imports)...)
		}
		m = append(m, section(3, []byte{1, 0})...)
		m = append(m, section(4, []byte{1, 0x70, 0, 1})...) // a funcref table of at least 1
		if globals != nil {
			m = append(m, section(6, globals)...)
		}
		code := append([]byte{0}, body...) // no locals
		code = append(code, 0x0b)
		fn := append(uleb(uint32(len(code))), code...)
		return append(m, section(10, append([]byte{1}, fn...))...)
	}
	oneMutable := []byte{1, 0x7f, 1, 0x41, 0x80, 0x80, 0x40, 0x0b}
	for _, tc := range []struct {
		name    string
		mod     []byte
		mutable int
		imports int
		writes  string // the first state write reported, "" for none
	}{
		{"as the engine's", module(nil, oneMutable, 0x23, 0, 0x41, 1, 0x6a, 0x24, 0, 0x01), 1, 0, ""},
		{"two mutable globals", module(nil, []byte{2, 0x7f, 1, 0x41, 0, 0x0b, 0x7e, 1, 0x42, 0, 0x0b}), 2, 0, ""},
		{"an imported mutable global", module([]byte{1, 1, 'm', 1, 'g', 0x03, 0x7f, 1}, oneMutable), 1, 1, ""},
		{"table.set", module(nil, oneMutable, 0x41, 0, 0xd0, 0x70, 0x26, 0), 1, 0, "table.set"},
		{"table.grow", module(nil, oneMutable, 0xd0, 0x70, 0x41, 1, 0xfc, 15, 0, 0x1a), 1, 0, "table.grow"},
		{"table.fill", module(nil, oneMutable, 0x41, 0, 0xd0, 0x70, 0x41, 1, 0xfc, 17, 0), 1, 0, "table.fill"},
		{"table.init", module(nil, oneMutable, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 12, 0, 0), 1, 0, "table.init"},
		{"table.copy", module(nil, oneMutable, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 14, 0, 0), 1, 0, "table.copy"},
		{"elem.drop", module(nil, oneMutable, 0xfc, 13, 0), 1, 0, "elem.drop"},
		{"data.drop", module(nil, oneMutable, 0xfc, 9, 0), 1, 0, "data.drop"},
		// every immediate the decoder knows, then a table write it must
		// still find: a block type, a branch table, an indirect call,
		// memory arguments, constants of each width (multi-byte LEBs
		// among them), a typed select, a saturating truncation
		{"a table write after every kind of immediate", module(nil, oneMutable,
			0x02, 0x40, 0x41, 0, 0x0e, 2, 0, 0, 0, 0x0b,
			0x41, 0, 0x11, 0, 0,
			0x41, 0, 0x28, 2, 0x80, 0x01, 0x1a,
			0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x1a,
			0x43, 0, 0, 0x80, 0x3f, 0xfc, 0, 0x1a,
			0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x1a,
			0x41, 0, 0x41, 1, 0x41, 1, 0x1c, 1, 0x7f, 0x1a,
			0x3f, 0, 0x40, 0, 0x1a,
			0x41, 0, 0xd2, 0, 0x26, 0), 1, 0, "table.set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := moduleState(tc.mod)
			if err != nil {
				t.Fatal(err)
			}
			if st.mutableGlobals != tc.mutable || st.importedGlobals != tc.imports {
				t.Errorf("%d mutable globals, %d imported; want %d, %d", st.mutableGlobals, st.importedGlobals, tc.mutable, tc.imports)
			}
			switch {
			case tc.writes == "" && len(st.stateWrites) > 0:
				t.Errorf("state writes %v, want none", st.stateWrites)
			case tc.writes != "" && (len(st.stateWrites) != 1 || !strings.Contains(st.stateWrites[0], " "+tc.writes+" ")):
				t.Errorf("state writes %v, want one %s", st.stateWrites, tc.writes)
			}
		})
	}
	// what the decoder does not know stops it, rather than let it read
	// an instruction's immediates as instructions
	for name, body := range map[string][]byte{
		"a SIMD instruction":        {0xfd, 0x0c},
		"an atomic instruction":     {0xfe, 0x00},
		"an undefined opcode":       {0x27},
		"a body cut short":          {0x41},
		"a body with trailing code": {0x01, 0x0b, 0x01},
	} {
		if _, err := moduleState(module(nil, oneMutable, body...)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(content)))...), content...)
}

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// wasmState is what moduleState finds of a module's state outside its
// linear memory.
type wasmState struct {
	mutableGlobals  int      // mutable globals the module defines
	importedGlobals int      // globals it imports, mutable or not
	functions       int      // function bodies decoded
	stateWrites     []string // instructions that write a table or drop a segment
}

// moduleState decodes a WebAssembly binary's import, global and code
// sections: the globals it defines and imports, and every instruction of
// every function body. The decoder knows the instructions of WebAssembly
// 2.0 without SIMD (the module's toolchain emits none) and fails on any
// other, and on a body that does not end exactly where its size says.
func moduleState(b []byte) (wasmState, error) {
	var st wasmState
	r := &wasmReader{b: b}
	if string(r.bytes(8)) != "\x00asm\x01\x00\x00\x00" {
		return st, errors.New("not a WebAssembly 1 binary")
	}
	for r.err == nil && r.pos < len(b) {
		id := r.byte()
		size := r.u32()
		body := r.bytes(int(size))
		if r.err != nil {
			break
		}
		s := &wasmReader{b: body}
		switch id {
		case 2: // imports
			for range s.u32() {
				s.name()
				s.name()
				switch kind := s.byte(); kind {
				case 0x00:
					s.u32()
				case 0x01:
					s.byte()
					s.limits()
				case 0x02:
					s.limits()
				case 0x03:
					s.byte()
					s.byte()
					st.importedGlobals++
				default:
					s.fail("import kind %#x", kind)
				}
			}
		case 6: // globals
			for range s.u32() {
				s.byte()
				if s.byte() == 1 {
					st.mutableGlobals++
				}
				s.expr("a global's initialiser", &st)
			}
		case 10: // code
			for i := range s.u32() {
				n := s.u32()
				fn := &wasmReader{b: s.bytes(int(n))}
				for range fn.u32() {
					fn.u32()
					fn.byte()
				}
				fn.expr(fmt.Sprintf("function body %d", i), &st)
				if fn.err == nil && fn.pos != len(fn.b) {
					fn.fail("function body %d ends at byte %d of %d", i, fn.pos, len(fn.b))
				}
				if fn.err != nil {
					return st, fn.err
				}
				st.functions++
			}
		}
		if parsed := id == 2 || id == 6 || id == 10; parsed && s.err == nil && s.pos != len(s.b) {
			s.fail("section %d ends at byte %d of %d", id, s.pos, len(s.b))
		}
		if s.err != nil {
			return st, fmt.Errorf("section %d: %w", id, s.err)
		}
	}
	return st, r.err
}

type wasmReader struct {
	b   []byte
	pos int
	err error
}

func (r *wasmReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *wasmReader) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *wasmReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || r.pos+n > len(r.b) {
		r.fail("unexpected end")
		return nil
	}
	p := r.b[r.pos : r.pos+n]
	r.pos += n
	return p
}

// leb reads a LEB128 number of at most maxBytes bytes, and returns it
// unsigned (a signed immediate is only skipped here).
func (r *wasmReader) leb(maxBytes int) uint64 {
	var v uint64
	for i := range maxBytes {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail("a LEB128 number longer than %d bytes", maxBytes)
	return 0
}

func (r *wasmReader) u32() uint32 { return uint32(r.leb(5)) }

func (r *wasmReader) name() { r.bytes(int(r.u32())) }

func (r *wasmReader) limits() {
	switch flag := r.byte(); flag {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail("limits flag %#x", flag)
	}
}

// stateWriters are the instructions that change an instance's state outside
// its linear memory and globals, by their 0xFC sub-opcode; table.set, the
// one of them with an opcode of its own, is 0x26.
var stateWriters = map[uint32]string{9: "data.drop", 12: "table.init", 13: "elem.drop", 14: "table.copy", 15: "table.grow", 17: "table.fill"}

// expr decodes instructions up to the end that closes the expression,
// recording in st each that writes state outside memory.
func (r *wasmReader) expr(where string, st *wasmState) {
	depth := 0
	for r.err == nil {
		at := r.pos
		op := r.byte()
		switch {
		case op == 0x0b: // end
			if depth == 0 {
				return
			}
			depth--
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			depth++
			if c := r.b[min(r.pos, len(r.b)-1)]; c == 0x40 || c >= 0x6f && c <= 0x7f {
				r.byte()
			} else {
				r.leb(5) // a type index, as a signed 33-bit number
			}
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2: // br, br_if, call, return_call, ref.func
			r.u32()
		case op >= 0x20 && op <= 0x25: // locals, globals, table.get
			r.u32()
		case op == 0x26:
			r.u32()
			st.stateWrites = append(st.stateWrites, fmt.Sprintf("%s, byte %d: table.set writes the table", where, at))
		case op == 0x0e: // br_table
			for range r.u32() {
				r.u32()
			}
			r.u32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select with types
			for range r.u32() {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores: align, offset
			r.u32()
			r.u32()
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41:
			r.leb(5)
		case op == 0x42:
			r.leb(10)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op >= 0x45 && op <= 0xc4: // numeric, sign extension
		case op == 0xd0: // ref.null
			r.byte()
		case op == 0xfc:
			sub := r.u32()
			switch {
			case sub <= 7: // saturating truncations
			case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init, memory.copy, table.init, table.copy
				r.u32()
				r.u32()
			case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
				r.u32()
			default:
				r.fail("instruction 0xfc %d, which the decoder does not know", sub)
			}
			if name, ok := stateWriters[sub]; ok {
				st.stateWrites = append(st.stateWrites, fmt.Sprintf("%s, byte %d: %s writes state outside memory", where, at, name))
			}
		default:
			r.fail("opcode %#x, which the decoder does not know", op)
		}
	}
	if r.err != nil {
		r.err = fmt.Errorf("%s: %w", where, r.err)
	}
}
