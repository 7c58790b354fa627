package scrape

import (
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
			Capacity{KVTokens: 8388608, BlockSize: 16, Source: "vllm:cache_config_info num_gpu_blocks × block_size"}},
		{"sglang", "# TYPE sglang:max_total_num_tokens gauge\nsglang:max_total_num_tokens{name=\"m\"} 161721\n# TYPE sglang:max_running_requests gauge\nsglang:max_running_requests{name=\"m\"} 48\n",
			Capacity{KVTokens: 161721, MaxSeqs: 48, Source: "sglang:max_total_num_tokens, sglang:max_running_requests"}},
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
// At counts the most that can be held together: the smallest first.
func TestCapacityCheck(t *testing.T) {
	lens := []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}
	if f := (Capacity{KVTokens: 4096, BlockSize: 16}).Check(lens, 32, false); f.Need != 8320 || f.At != 3 || f.Fits {
		t.Errorf("KV cache of 4,096: %+v", f)
	}
	// Ragged: one long prompt of 3,000 and three of 500 (3,040 and 544 tokens with their 32):
	// the three short ones fit together, the long one with at most one other.
	if f := (Capacity{KVTokens: 4096, BlockSize: 16}).Check([]int{3000, 500, 500, 500}, 32, false); f.Need != 4672 || f.At != 3 || f.Fits {
		t.Errorf("ragged: %+v", f)
	}
	if f := (Capacity{MaxSeqs: 2}).Check(lens, 32, false); f.At != 2 || f.Fits {
		t.Errorf("2 sequences at once: %+v", f)
	}
	if f := (Capacity{KVTokens: 4096, BlockSize: 16}).Check(lens, 32, true); f.Need != 1008+8*32 || !f.Fits {
		t.Errorf("one shared prompt: %+v", f)
	}
}
