package scrape

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/warning"
)

// Capacity is how much a server can hold at once, as far as it says: its KV cache in tokens
// (KVTokens, in blocks of BlockSize tokens; 0 = unknown) and the most sequences it runs
// together (MaxSeqs, 0 = unknown). KVSource and SeqsSource name where each came from
// ("vllm:cache_config_info num_gpu_blocks × block_size", "sglang:max_running_requests", "the
// built-in engine's max_num_seqs").
type Capacity struct {
	KVTokens   int
	BlockSize  int
	MaxSeqs    int
	KVSource   string
	SeqsSource string
}

// Known reports whether c says anything.
func (c Capacity) Known() bool { return c.KVTokens > 0 || c.MaxSeqs > 0 }

// CapacityOf reads a server's capacity from its /metrics:
//
//	vLLM:   vllm:cache_config_info{block_size, num_gpu_blocks}: KVTokens = num_gpu_blocks ×
//	        block_size (the labels of a gauge of value 1, as vLLM exposes its cache config);
//	SGLang: sglang:max_total_num_tokens (KVTokens) and sglang:max_running_requests (MaxSeqs).
//
// ok is false when the snapshot has neither.
func CapacityOf(s Snapshot) (c Capacity, ok bool) {
	if f, found := s.Families["vllm:cache_config_info"]; found {
		for _, m := range f.GetMetric() {
			var blocks, size int
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "num_gpu_blocks":
					blocks, _ = strconv.Atoi(lp.GetValue())
				case "block_size":
					size, _ = strconv.Atoi(lp.GetValue())
				}
			}
			if blocks > 0 && size > 0 {
				return Capacity{KVTokens: blocks * size, BlockSize: size, KVSource: "vllm:cache_config_info num_gpu_blocks × block_size"}, true
			}
		}
	}
	if v, found := s.Value("sglang:max_total_num_tokens"); found && v > 0 {
		c.KVTokens, c.KVSource = int(v), "sglang:max_total_num_tokens"
	}
	if v, found := s.Value("sglang:max_running_requests"); found && v > 0 {
		c.MaxSeqs, c.SeqsSource = int(v), "sglang:max_running_requests"
	}
	return c, c.Known()
}

// Limit names which of a server's limits keeps a batch from running whole.
type Limit string

const (
	// LimitNone: the batch fits.
	LimitNone Limit = ""
	// LimitSeqs: the server runs fewer sequences at once than the batch (MaxSeqs), while its
	// KV cache, if known, holds more of them.
	LimitSeqs Limit = "sequences"
	// LimitKV: the KV cache holds fewer of the batch's sequences at once than MaxSeqs allows
	// (or MaxSeqs is unknown).
	LimitKV Limit = "kv-cache"
)

// Fit is what a batch needs of a server's Capacity: Need its KV cache in tokens, At how many
// of its sequences can be held at once (≤ B), and Fits whether all of them can. KVAt is how
// many the KV cache alone holds (B when it is unknown or holds all), and Binds the limit that
// sets At when the batch does not fit (LimitNone when it does): the sequences-at-once limit
// when MaxSeqs ≤ KVAt, else the KV cache.
type Fit struct {
	Need, At int
	Fits     bool
	KVAt     int
	Binds    Limit
}

// Check holds a batch against c: lens are its prompts' lengths in tokens and maxTokens the
// tokens each sequence generates; shared reports that every sequence continues one prompt
// (n = B: the prompt's cache blocks are held once). Each sequence needs ⌈(prompt + maxTokens) /
// BlockSize⌉ blocks (its whole context at the end of the cell; its own blocks past a shared
// prompt). KVAt is the largest k such that the k smallest needs fit (no more can ever be held
// together); At is KVAt bounded by MaxSeqs; with an unknown KV cache, At is MaxSeqs.
func (c Capacity) Check(lens []int, maxTokens int, shared bool) Fit {
	block := max(c.BlockSize, 1)
	blocks := func(tokens int) int { return (tokens + block - 1) / block * block }
	var needs []int
	base := 0
	if shared && len(lens) > 0 {
		base = blocks(lens[0])
		for range lens {
			needs = append(needs, blocks(maxTokens))
		}
	} else {
		for _, l := range lens {
			needs = append(needs, blocks(l+maxTokens))
		}
	}
	f := Fit{Need: base, KVAt: len(needs)}
	for _, n := range needs {
		f.Need += n
	}
	if c.KVTokens > 0 {
		slices.Sort(needs)
		used := base
		f.KVAt = 0
		for _, n := range needs {
			if used+n > c.KVTokens {
				break
			}
			used += n
			f.KVAt++
		}
	}
	f.At = f.KVAt
	if c.MaxSeqs > 0 {
		f.At = min(f.At, c.MaxSeqs)
	}
	f.Fits = f.At == len(needs)
	switch {
	case f.Fits:
	case c.MaxSeqs > 0 && c.MaxSeqs <= f.KVAt:
		f.Binds = LimitSeqs
	default:
		f.Binds = LimitKV
	}
	return f
}

// String describes c: "8,388,608 KV-cache tokens (the built-in engine's kv_cache_tokens), 256
// sequences at once (the built-in engine's max_num_seqs)".
func (c Capacity) String() string {
	var parts []string
	if c.KVTokens > 0 {
		parts = append(parts, fmt.Sprintf("%s KV-cache tokens (%s)", warning.Thousands(c.KVTokens), c.KVSource))
	}
	if c.MaxSeqs > 0 {
		parts = append(parts, fmt.Sprintf("%s sequences at once (%s)", warning.Thousands(c.MaxSeqs), c.SeqsSource))
	}
	return strings.Join(parts, ", ")
}

// Limit words the limit of c that binds (LimitSeqs or LimitKV) with its figure and source:
// "runs at most 256 sequences at once (the built-in engine's max_num_seqs)", "holds 4,096
// KV-cache tokens (vllm:cache_config_info num_gpu_blocks × block_size)"; "" for LimitNone.
func (c Capacity) Limit(l Limit) string {
	switch l {
	case LimitSeqs:
		return fmt.Sprintf("runs at most %s sequences at once (%s)", warning.Thousands(c.MaxSeqs), c.SeqsSource)
	case LimitKV:
		return fmt.Sprintf("holds %s KV-cache tokens (%s)", warning.Thousands(c.KVTokens), c.KVSource)
	}
	return ""
}
