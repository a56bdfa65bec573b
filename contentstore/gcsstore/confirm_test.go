package gcsstore

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
)

// deleteObject deletes an object of the emulator as someone else's client
// would: the real client, through STORAGE_EMULATOR_HOST.
func deleteObject(t *testing.T, bucket, name string) {
	t.Helper()
	client, err := storage.NewClient(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Bucket(bucket).Object(name).Delete(ctxT(t)); err != nil {
		t.Fatalf("deleting gs://%s/%s: %v", bucket, name, err)
	}
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Put, run, delete, run, over the real client and fake-gcs-server: the
// object deleted from the bucket is run from the cache without a request
// until ConfirmAfter has passed since the store last found it; then one
// request for its metadata (and the listing that says why it is missing),
// none for its bytes, finds it gone, and the cache drops it.
func TestCacheConfirmsOverGCS(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	clk := &clock{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	c := contentstore.NewCache(openT(t, "gs://"+testBucket+"/team", opts),
		contentstore.CacheOptions{MaxBytes: contentstore.DefaultCacheBytes, ConfirmAfter: time.Minute, Logger: opts.Logger, Now: clk.Now})
	ctx := ctxT(t)
	ref, err := c.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	get := func(step string) {
		t.Helper()
		if got, err := c.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
			t.Fatalf("%s: Get = %q, %v; want the script", step, got, err)
		}
	}
	get("the first run")
	get("the second run")
	deleteObject(t, testBucket, ref.ObjectName("team/"))
	f.resetRequests()
	clk.advance(time.Minute - time.Nanosecond)
	get("a run within the bound, after the delete")
	if reqs := f.requests(); len(reqs) != 0 {
		t.Fatalf("a run within the bound made requests: %+v", reqs)
	}

	clk.advance(time.Nanosecond)
	got, err := c.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrNotFound) || got != nil {
		t.Fatalf("a run at the bound, after the delete: Get = %q, %v; want nil, contentref.ErrNotFound", got, err)
	}
	reqs := f.requests()
	if n, _ := f.mediaRequests(); n != 0 || len(reqs) == 0 || !strings.Contains(reqs[0].path, ref.Hex()) {
		t.Errorf("the confirmation made %+v; want the object's metadata first, and no request for its bytes", reqs)
	}
	if n, _ := c.Len(); n != 0 {
		t.Errorf("the cache holds %d scripts after the store said the script is gone", n)
	}
}

// A bucket that fails the confirmation does not get the script run: the
// Get fails with ErrUnavailable once the retries are spent, and succeeds
// again, without reading the bytes, once the bucket answers.
func TestCacheUnconfirmedOverGCS(t *testing.T) {
	f := newFakeGCS(t, testBucket)
	opts, _ := fastOpts(t)
	c := contentstore.NewCache(openT(t, "gs://"+testBucket, opts),
		contentstore.CacheOptions{MaxBytes: contentstore.DefaultCacheBytes, ConfirmAfter: 0, Logger: opts.Logger})
	ctx := ctxT(t)
	ref, err := c.Put(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	f.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		writeGCSError(w, http.StatusServiceUnavailable)
		return true
	})
	got, err := c.Get(ctx, ref)
	if !errors.Is(err, contentref.ErrUnavailable) || errors.Is(err, contentref.ErrNotFound) || got != nil {
		t.Fatalf("Get while the bucket fails = %q, %v; want nil, contentref.ErrUnavailable", got, err)
	}
	f.setHook(nil)
	f.resetRequests()
	if got, err := c.Get(ctx, ref); err != nil || !bytes.Equal(got, script) {
		t.Fatalf("Get once the bucket answers = %q, %v", got, err)
	}
	if n, _ := f.mediaRequests(); n != 0 || len(f.requests()) != 1 {
		t.Errorf("the confirmation made %+v, want one request for metadata", f.requests())
	}
}
