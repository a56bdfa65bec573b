package contentstore

import (
	"context"
	"sync"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// MemStore keeps scripts in memory, for tests and one-shot commands. It
// copies bytes in and out, so callers cannot change what it holds.
type MemStore struct {
	opts Options

	mu      sync.Mutex
	objects map[contentref.Ref][]byte
	closed  bool
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty memory store.
func NewMemStore(opts Options) (*MemStore, error) {
	o, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &MemStore{opts: o, objects: make(map[contentref.Ref][]byte)}, nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	if err := CheckRef(ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	stored, ok := s.objects[ref]
	closed := s.closed
	s.mu.Unlock()
	loc := "mem:" + ref.ObjectName("")
	switch {
	case closed:
		return nil, errClosed
	case !ok:
		return nil, NotFound(loc, "no such script")
	case int64(len(stored)) > s.opts.MaxScriptBytes:
		return nil, TooLarge(loc, int64(len(stored)), s.opts.MaxScriptBytes)
	}
	// Stored bytes are never shared, so they cannot have changed; verifying
	// anyway keeps one Get contract for every store.
	if err := verify(stored, ref, loc, s.opts.Logger); err != nil {
		return nil, err
	}
	return clone(stored), nil
}

// Exists implements Store.
func (s *MemStore) Exists(ctx context.Context, ref contentref.Ref) error {
	if err := CheckRef(ref); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	_, ok := s.objects[ref]
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return errClosed
	case !ok:
		return NotFound("mem:"+ref.ObjectName(""), "no such script")
	}
	return nil
}

// Put implements Store.
func (s *MemStore) Put(ctx context.Context, data []byte) (contentref.Ref, error) {
	if err := ctx.Err(); err != nil {
		return contentref.Ref{}, err
	}
	if err := CheckPutSize(data, s.opts.MaxScriptBytes); err != nil {
		return contentref.Ref{}, err
	}
	ref := contentref.RefOf(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return contentref.Ref{}, errClosed
	}
	if _, ok := s.objects[ref]; !ok {
		s.objects[ref] = clone(data)
	}
	return ref, nil
}

// Check implements Store: a memory store is usable until closed.
func (s *MemStore) Check(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return ctx.Err()
}

// Close implements Store and drops the stored scripts.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.objects = nil
	return nil
}

func (s *MemStore) MaxScriptBytes() int64 { return s.opts.MaxScriptBytes }
