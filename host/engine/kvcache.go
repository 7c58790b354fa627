package engine

// kvCache is the KV cache block manager with a block-granular prefix cache, owned by the
// scheduler goroutine (no locking).
//
// Capacity is total blocks of blockSize tokens. A block is in one of three states:
//   - held: referenced by at least one running sequence (cached blocks are shared by ref count;
//     private blocks, e.g. a partial last block or generated tokens, are counted per sequence);
//   - cached-free: a full prompt block with a known hash and no reference, kept in an LRU list
//     so a later prompt with the same prefix can reuse it (vLLM's "free but cached" blocks);
//   - empty.
//
// Allocation takes empty blocks first, then evicts the least recently freed cached block.
// Freed sequences return their cached blocks tail-first, so a prompt's tail blocks are evicted
// before its head (as in vLLM).
type kvCache struct {
	total    int // blocks
	used     int // held blocks: shared entries with ref > 0 + private blocks
	enabled  bool
	entries  map[uint64]*cblock
	lruHead  cblock // sentinel of the cached-free list; next = oldest
	lruCount int
}

// cblock is one hashed (prefix-cacheable) block.
type cblock struct {
	hash       uint64
	ref        int
	prev, next *cblock // LRU links while ref == 0
}

func newKVCache(totalBlocks int, enabled bool) *kvCache {
	c := &kvCache{total: totalBlocks, enabled: enabled, entries: map[uint64]*cblock{}}
	c.lruHead.prev, c.lruHead.next = &c.lruHead, &c.lruHead
	return c
}

// free returns the number of blocks that can be allocated now (empty + evictable).
func (c *kvCache) free() int { return c.total - c.used }

func (c *kvCache) lruRemove(b *cblock) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
	c.lruCount--
}

func (c *kvCache) lruPushBack(b *cblock) {
	b.prev, b.next = c.lruHead.prev, &c.lruHead
	c.lruHead.prev.next = b
	c.lruHead.prev = b
	c.lruCount++
}

// alloc takes n private blocks, evicting cached-free blocks as needed. It reports false and
// takes nothing when fewer than n blocks are free.
func (c *kvCache) alloc(n int) bool {
	if n <= 0 {
		return true
	}
	if c.free() < n {
		return false
	}
	for empty := c.total - c.used - c.lruCount; empty < n; empty++ {
		old := c.lruHead.next
		c.lruRemove(old)
		delete(c.entries, old.hash)
	}
	c.used += n
	return true
}

// release gives back n private blocks.
func (c *kvCache) release(n int) { c.used -= n }

// lookup returns how many leading blocks of hashes are cached (at most max), taking a
// reference on each; the caller owns them as shared blocks.
func (c *kvCache) lookup(hashes []uint64, max int) []*cblock {
	if !c.enabled {
		return nil
	}
	var got []*cblock
	for i := 0; i < len(hashes) && i < max; i++ {
		b := c.entries[hashes[i]]
		if b == nil {
			break
		}
		c.ref(b)
		got = append(got, b)
	}
	return got
}

func (c *kvCache) ref(b *cblock) {
	if b.ref == 0 {
		c.lruRemove(b)
		c.used++
	}
	b.ref++
}

// promote turns one private block holding the full prompt block with hash h into a shared
// cached block and returns it. If h is already cached, the private block is released and the
// existing block shared instead.
func (c *kvCache) promote(h uint64) *cblock {
	if !c.enabled {
		return nil
	}
	if b := c.entries[h]; b != nil {
		c.ref(b)
		c.used-- // the private copy
		return b
	}
	b := &cblock{hash: h, ref: 1}
	c.entries[h] = b
	return b // the private block's slot becomes this entry's: used unchanged
}

// unref drops references on shared blocks, tail first, making unreferenced ones cached-free.
func (c *kvCache) unref(bs []*cblock) {
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		b.ref--
		if b.ref == 0 {
			c.used--
			c.lruPushBack(b)
		}
	}
}

// reset drops every cached-free block (POST /reset_prefix_cache); held blocks stay.
func (c *kvCache) reset() {
	for c.lruCount > 0 {
		old := c.lruHead.next
		c.lruRemove(old)
		delete(c.entries, old.hash)
	}
}
