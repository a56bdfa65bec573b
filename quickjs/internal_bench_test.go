package quickjs

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	e, _ := New(ctx, WithPoolSize(0))
	defer e.Close(ctx)
	_ = e.compile(ctx)
	b.Run("instantiate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mod, err := e.rt.InstantiateModule(ctx, e.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				b.Logf("initial memory %d", mod.Memory().Size())
			}
			mod.Close(ctx)
		}
	})
	b.Run("instantiate+init", func(b *testing.B) {
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
}
