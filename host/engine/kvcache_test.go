package engine

import "testing"

func TestKVCacheRefCountingAndLRU(t *testing.T) {
	c := newKVCache(4, true)
	// A sequence computes two full prompt blocks (hashes 1, 2) plus one private block.
	if !c.alloc(3) {
		t.Fatal("alloc 3 of 4")
	}
	a := []*cblock{c.promote(1), c.promote(2)}
	if c.used != 3 || c.free() != 1 {
		t.Fatalf("used %d free %d, want 3 and 1", c.used, c.free())
	}
	// A second sequence with the same prefix shares both blocks.
	b := c.lookup([]uint64{1, 2, 3}, 10)
	if len(b) != 2 || a[0].ref != 2 || c.used != 3 {
		t.Fatalf("hit %d blocks, ref %d, used %d", len(b), a[0].ref, c.used)
	}
	// Both finish: blocks 1 and 2 become cached-free; the private block is released.
	c.unref(a)
	c.unref(b)
	c.release(1)
	if c.used != 0 || c.lruCount != 2 || c.free() != 4 {
		t.Fatalf("used %d lru %d free %d", c.used, c.lruCount, c.free())
	}
	// Allocating 3 blocks evicts one cached block: the tail (2) goes first.
	if !c.alloc(3) {
		t.Fatal("alloc 3 with 2 evictable")
	}
	if _, ok := c.entries[2]; ok {
		t.Errorf("block 2 (tail) should be evicted first")
	}
	if _, ok := c.entries[1]; !ok {
		t.Errorf("block 1 (head) should still be cached")
	}
	// Only 1 block left: a lookup hits it; asking for 2 more fails and takes nothing.
	if got := c.lookup([]uint64{1, 2}, 10); len(got) != 1 {
		t.Errorf("lookup after eviction hit %d, want 1", len(got))
	}
	if c.alloc(1) || c.used != 4 {
		t.Errorf("alloc beyond capacity: used %d", c.used)
	}
	// reset drops only unreferenced cached blocks: block 1 is referenced.
	c.reset()
	if _, ok := c.entries[1]; !ok {
		t.Errorf("reset dropped a referenced block")
	}
}

func TestKVCacheDisabled(t *testing.T) {
	c := newKVCache(8, false)
	c.alloc(2)
	if b := c.promote(7); b != nil {
		t.Errorf("promote with caching off")
	}
	if got := c.lookup([]uint64{7}, 1); len(got) != 0 {
		t.Errorf("lookup with caching off hit %d", len(got))
	}
}
