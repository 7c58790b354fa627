package plugin

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/sdk/abi"
)

// A released pure plugin answers the cells it was asked from its cache, frees its instance
// and compiled module, and is loaded again, with the same answers as before, for a cell it
// was not asked; a plugin that is not pure is not released.
func TestReleasePure(t *testing.T) {
	ctx := context.Background()
	h, err := NewHost(ctx, Options{Dir: testplugins.Dir(t), CacheDir: testplugins.CacheDir(t), Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.LoadLengths(ctx, "gamma", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Info().HasCap(abi.CapPure) {
		t.Fatal("gamma does not declare pure")
	}
	asked, err := p.Lengths(ctx, 8, 1000, 1, 4000)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := h.LoadLengths(ctx, "gamma", nil) // a second instance, never released
	if err != nil {
		t.Fatal(err)
	}
	other, err := fresh.Lengths(ctx, 16, 2000, 1, 8000)
	if err != nil {
		t.Fatal(err)
	}
	info, old := p.Info(), p.in
	if !p.Release(ctx) {
		t.Fatal("Release of a pure plugin returned false")
	}
	if !old.mod.IsClosed() || !p.released || p.in == old || p.in.mod != nil || p.in.m.compiled != nil {
		t.Fatal("the released plugin's instance is still open, or still referenced")
	}
	h.mu.Lock()
	_, kept := h.compiled[old.m.sum]
	h.mu.Unlock()
	if kept {
		t.Fatal("the released plugin's compiled module is still the host's")
	}
	got, err := p.Lengths(ctx, 8, 1000, 1, 4000)
	if err != nil || !slices.Equal(got, asked) || !p.released {
		t.Fatalf("asked cell after Release: %v, %v (released %v), want %v from the cache", got, err, p.released, asked)
	}
	got, err = p.Lengths(ctx, 16, 2000, 1, 8000)
	if err != nil || !slices.Equal(got, other) || p.released {
		t.Fatalf("new cell after Release: %v, %v (released %v), want %v from a loaded plugin", got, err, p.released, other)
	}
	if !reflect.DeepEqual(p.Info(), info) {
		t.Errorf("Info changed across Release: %+v, want %+v", p.Info(), info)
	}
	if err := p.VerifyPure(ctx, 4, 500, 1, 4000); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A plugin without the capability has no cache: it is kept.
	np := &LengthsPlugin{in: fresh.in, info: fresh.info, host: h}
	if np.Release(ctx) || fresh.in.mod.IsClosed() {
		t.Fatal("a plugin that is not pure was released")
	}
}
