package quickjs

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bench/mcpdoc"
)

// BenchmarkInstantiate is the set-up of an instance for a run: built new
// (instantiate+init: wazero's instantiation, then the set-up image written
// over its memory), and reset to the image after a run of echo (reset: what
// every run but an instance's first pays, off the request path).
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	e, _ := New(ctx, WithPoolSize(0))
	defer e.Close(ctx)
	_ = e.compile(ctx)
	b.Run("instantiate+init", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				b.Logf("memory after init %d", in.mem.Size())
			}
			in.close()
		}
	})
	b.Run("reset", func(b *testing.B) {
		in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
		if err != nil {
			b.Fatal(err)
		}
		defer in.close()
		st := &runState{deadline: time.Now().Add(time.Hour)}
		rctx := context.WithValue(ctx, runStateKey{}, st)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if _, err := in.exec(rctx, `input`, `{"hello":"world","n":[1,2,3]}`, 64<<20, DefaultCPUBudget, false, 1); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if !e.image.reset(in) {
				b.Fatal("reset refused")
			}
		}
	})
}

// BenchmarkScriptSizes is a run of the model-written transformers of
// bench/workloads over the 16 KiB MCP-like document, in one instance reset
// after each run: compiled (the script's first run: the compile, its image
// taken, then the run) and restored (its later runs: the image written into
// the instance, then the run); restore alone is the image written. The
// image's size is reported as image-bytes.
func BenchmarkScriptSizes(b *testing.B) {
	ctx := context.Background()
	e, _ := New(ctx, WithPoolSize(0))
	defer e.Close(ctx)
	_ = e.compile(ctx)
	doc := mcpdoc.Document(16 << 10)
	for _, size := range []string{"100B", "2KB", "20KB", "100KB"} {
		src, err := os.ReadFile("../bench/workloads/transform-" + size + ".js")
		if err != nil {
			b.Fatal(err)
		}
		script := string(src)
		in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
		if err != nil {
			b.Fatal(err)
		}
		st := &runState{deadline: time.Now().Add(time.Hour)}
		rctx := context.WithValue(ctx, runStateKey{}, st)
		compile := func(b *testing.B) *scriptImage {
			if _, err := in.compileScript(ctx, script, e.cfg.maxMemory); err != nil {
				b.Fatal(err)
			}
			img, err := e.image.captureScript(in)
			if err != nil {
				b.Fatal(err)
			}
			mem, _ := in.mem.Read(0, e.image.stack)
			e.image.clearStack(mem)
			return img
		}
		run := func(b *testing.B) {
			raw, err := in.runCompiled(rctx, doc, 64<<20, DefaultCPUBudget, false, 1)
			if err != nil || raw.status != statusOK {
				b.Fatalf("status %d, %v", raw.status, err)
			}
			if !e.image.reset(in) {
				b.Fatal("reset refused")
			}
		}
		free := func(img *scriptImage) { img.refs = 1; (&scriptCache{}).drop(img) }
		b.Run(size+"/compiled", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				img := compile(b)
				run(b)
				free(img)
			}
		})
		img := compile(b)
		run(b)
		b.Run(size+"/restored", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := img.restore(in); err != nil {
					b.Fatal(err)
				}
				run(b)
			}
			b.ReportMetric(float64(len(img.data)), "image-bytes")
		})
		b.Run(size+"/restore", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := img.restore(in); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if !e.image.reset(in) {
					b.Fatal("reset refused")
				}
				b.StartTimer()
			}
		})
		free(img)
		in.close()
	}
}

// BenchmarkNewCalls is what an instance pays for new call handles after a
// run that went deep (instance.newCalls): several resets' worth, which is
// why a shallow run keeps its handles.
func BenchmarkNewCalls(b *testing.B) {
	ctx := context.Background()
	e, _ := New(ctx, WithPoolSize(0))
	defer e.Close(ctx)
	_ = e.compile(ctx)
	in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		b.Fatal(err)
	}
	defer in.close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		in.newCalls()
	}
}
