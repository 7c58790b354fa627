package replay

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/genload/genload/host/trace"
)

// Blocks is the source of replayed prompts' tokens: host/prompt's Builder satisfies it.
type Blocks interface {
	// Block returns the first n tokens of prompt source q.
	Block(q, n int) ([]int32, error)
}

// prompts holds every block of a schedule, built before anything is sent.
type prompts struct {
	blocks map[int64][]int32 // prefix block of each hash, trace.BlockTokens tokens
	tails  [][]int32         // per item: the tokens after its blocks (nil when none)
}

// buildPrompts assigns sources (the j-th distinct hash in order of first appearance takes
// source j; then one source per item that needs tokens beyond its blocks) and builds every
// block, in parallel.
func buildPrompts(s *Schedule, b Blocks) (*prompts, error) {
	type job struct {
		hash   int64
		item   int // −1 for a hash block
		src    int
		n      int
		isTail bool
	}
	src := map[int64]int{}
	var jobs []job
	for _, it := range s.Items {
		for _, h := range it.Hashes[:min(len(it.Hashes), blocksFor(it.Input))] {
			if _, ok := src[h]; !ok {
				src[h] = len(src)
				jobs = append(jobs, job{hash: h, item: -1, src: src[h], n: trace.BlockTokens})
			}
		}
	}
	next := len(src)
	for _, it := range s.Items {
		if rest := it.Input - trace.BlockTokens*min(len(it.Hashes), blocksFor(it.Input)); rest > 0 {
			jobs = append(jobs, job{item: it.Index, src: next, n: rest, isTail: true})
			next++
		}
	}
	p := &prompts{blocks: make(map[int64][]int32, len(src)), tails: make([][]int32, len(s.Items))}
	out := make([][]int32, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	var k atomic.Int64
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(k.Add(1)) - 1; i < len(jobs); i = int(k.Add(1)) - 1 {
				out[i], errs[i] = b.Block(jobs[i].src, jobs[i].n)
			}
		})
	}
	wg.Wait()
	for i, j := range jobs {
		if errs[i] != nil {
			return nil, fmt.Errorf("prompt blocks: %w", errs[i])
		}
		if j.isTail {
			p.tails[j.item] = out[i]
		} else {
			p.blocks[j.hash] = out[i]
		}
	}
	return p, nil
}

// blocksFor is the number of prefix blocks a prompt of n tokens spans: ⌈n / BlockTokens⌉.
func blocksFor(n int) int { return (n + trace.BlockTokens - 1) / trace.BlockTokens }

// prompt returns item it's prompt: its blocks cut to its length, then its tail.
func (p *prompts) prompt(it *Item) []int32 {
	out := make([]int32, 0, it.Input)
	for _, h := range it.Hashes[:min(len(it.Hashes), blocksFor(it.Input))] {
		out = append(out, p.blocks[h][:min(trace.BlockTokens, it.Input-len(out))]...)
	}
	return append(out, p.tails[it.Index]...)
}
