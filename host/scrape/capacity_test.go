package scrape

import (
	"slices"
	"strings"
	"testing"
)

// The capacity series as vLLM and SGLang expose them: vLLM's cache config as the labels of a
// gauge, SGLang's two gauges.
func TestCapacityOf(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Capacity
	}{
		{"vllm", "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",num_gpu_blocks=\"524288\"} 1\n",
			Capacity{KVTokens: 8388608, BlockSize: 16, KVSource: "vllm:cache_config_info num_gpu_blocks × block_size"}},
		{"sglang", "# TYPE sglang:max_total_num_tokens gauge\nsglang:max_total_num_tokens{name=\"m\"} 161721\n# TYPE sglang:max_running_requests gauge\nsglang:max_running_requests{name=\"m\"} 48\n",
			Capacity{KVTokens: 161721, MaxSeqs: 48, KVSource: "sglang:max_total_num_tokens", SeqsSource: "sglang:max_running_requests"}},
	} {
		fams, err := Parse(strings.NewReader(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := CapacityOf(Snapshot{Families: fams}); !ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := CapacityOf(Snapshot{}); ok {
		t.Error("an empty snapshot has a capacity")
	}
}

// 8 prompts of 1,000 tokens + 32 each in blocks of 16 (1,040 tokens a sequence): 4,096 tokens
// hold 3 of them; a server of 2 sequences holds 2; n = 8 of one prompt holds the prompt once.
// At counts the most that can be held together: the smallest first. Binds names the limit that
// sets At: the KV cache when it holds fewer than MaxSeqs, else the sequences at once.
func TestCapacityCheck(t *testing.T) {
	lens := []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}
	for _, tc := range []struct {
		name   string
		c      Capacity
		lens   []int
		maxTok int
		shared bool
		want   Fit
	}{
		{"KV cache of 4,096", Capacity{KVTokens: 4096, BlockSize: 16}, lens, 32, false, Fit{Need: 8320, At: 3, KVAt: 3, Binds: LimitKV}},
		// Ragged: one long prompt of 3,000 and three of 500 (3,040 and 544 tokens with their
		// 32): the three short ones fit together, the long one with at most one other.
		{"ragged", Capacity{KVTokens: 4096, BlockSize: 16}, []int{3000, 500, 500, 500}, 32, false, Fit{Need: 4672, At: 3, KVAt: 3, Binds: LimitKV}},
		{"2 sequences at once", Capacity{MaxSeqs: 2}, lens, 32, false, Fit{Need: 8256, At: 2, KVAt: 8, Binds: LimitSeqs}},
		{"one shared prompt", Capacity{KVTokens: 4096, BlockSize: 16}, lens, 32, true, Fit{Need: 1008 + 8*32, At: 8, KVAt: 8, Fits: true}},
		// The built-in engine's defaults at B = 300, L = 200: the KV cache holds all 300
		// (67,200 tokens of 8,388,608), max_num_seqs 256 binds; SGLang's
		// max_running_requests = 4 binds the same way.
		{"max_num_seqs", Capacity{KVTokens: 8388608, BlockSize: 16, MaxSeqs: 256}, slices.Repeat([]int{200}, 300), 20, false, Fit{Need: 67200, At: 256, KVAt: 300, Binds: LimitSeqs}},
		{"max_running_requests", Capacity{KVTokens: 161721, BlockSize: 1, MaxSeqs: 4}, lens, 32, false, Fit{Need: 8256, At: 4, KVAt: 8, Binds: LimitSeqs}},
		// Both short: the KV cache holds 3, MaxSeqs 5: the KV cache binds; MaxSeqs 3 = KVAt:
		// the sequences at once (the KV cache would hold no more anyway).
		{"both, KV smaller", Capacity{KVTokens: 4096, BlockSize: 16, MaxSeqs: 5}, lens, 32, false, Fit{Need: 8320, At: 3, KVAt: 3, Binds: LimitKV}},
		{"both, equal", Capacity{KVTokens: 4096, BlockSize: 16, MaxSeqs: 3}, lens, 32, false, Fit{Need: 8320, At: 3, KVAt: 3, Binds: LimitSeqs}},
	} {
		if got := tc.c.Check(tc.lens, tc.maxTok, tc.shared); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	c := Capacity{KVTokens: 8388608, BlockSize: 16, MaxSeqs: 256, KVSource: "kv src", SeqsSource: "seqs src"}
	if got, want := c.Limit(LimitSeqs), "runs at most 256 sequences at once (seqs src)"; got != want {
		t.Errorf("Limit(LimitSeqs) = %q, want %q", got, want)
	}
	if got, want := c.Limit(LimitKV), "holds 8,388,608 KV-cache tokens (kv src)"; got != want {
		t.Errorf("Limit(LimitKV) = %q, want %q", got, want)
	}
}
