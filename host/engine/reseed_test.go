package engine

import "testing"

// A reseed takes effect at the next burst: its burst and step factors are those of a fresh
// generator of the new seed, the burst under way keeping its factor; an engine without noise
// has nothing to reseed.
func TestReseedNoiseAtTheNextBurst(t *testing.T) {
	n := Noise{StepCV: 0.1, BurstCV: 0.1, SlowFactor: 1, Seed: 1}
	z := newNoiser(n)
	z.newBurst()
	b1 := z.burst
	z.factor()
	z.reseed.Store(new(uint64(7)))
	if f := z.factor(); z.burst != b1 || f == 0 {
		t.Fatalf("the reseed changed the burst under way: %v, was %v", z.burst, b1)
	}
	z.newBurst()
	fresh := newNoiser(Noise{StepCV: 0.1, BurstCV: 0.1, SlowFactor: 1, Seed: 7})
	fresh.newBurst()
	if z.burst != fresh.burst || z.n.Seed != 7 {
		t.Errorf("after the reseed: burst %v seed %d, want a fresh generator's %v, seed 7", z.burst, z.n.Seed, fresh.burst)
	}
	for i := range 50 {
		if a, b := z.factor(), fresh.factor(); a != b {
			t.Fatalf("step %d after the reseed: factor %v, a fresh generator's %v", i, a, b)
		}
	}
	e, _ := newTestEngine(t, func(c *Config) { c.Noise = n })
	quiet, _ := newTestEngine(t, nil)
	if !e.ReseedNoise(3) || quiet.ReseedNoise(3) {
		t.Errorf("ReseedNoise: %v with noise, %v without; want true, false", e.ReseedNoise(3), quiet.ReseedNoise(3))
	}
	if p := e.sched.noise.reseed.Load(); p == nil || *p != 3 {
		t.Errorf("after ReseedNoise(3) the pending seed is %v, want 3", p)
	}
}
