// Package matrix turns the [matrix] table into the ordered list of (sequence length, batch
// size) cells a run measures.
package matrix

import (
	"fmt"
	"sort"
	"strings"
)

// Cell is one measurement: B sequences whose prompt lengths have target mean SeqLen tokens.
type Cell struct {
	// Index is the cell's position in the run order (0-based); prompts, plugin calls and
	// resume use it, so it depends only on the config.
	Index int `json:"index"`
	// SeqLen is the target mean prompt length L in tokens (chat template included).
	SeqLen int `json:"seq_len"`
	// Batch is the batch size B: the number of concurrent sequences.
	Batch int `json:"batch"`
	// FirstRow is the corpus row of prompt 0; prompt i uses row (FirstRow + i) mod rows.
	// Rows advance by B from one cell to the next, so consecutive cells differ.
	FirstRow int `json:"first_row"`
}

// Key is a cell's stable identity across runs: "L=<seq_len>,B=<batch>".
func (c Cell) Key() string { return fmt.Sprintf("L=%d,B=%d", c.SeqLen, c.Batch) }

// Spec is what the matrix is built from (a validated config's [matrix] table plus the
// resolved context and max_tokens).
type Spec struct {
	SeqLens           []int   // target mean lengths L, tokens
	BatchSizes        []int   // batch sizes B
	Pairs             [][]int // extra [L, B] cells, run after the grid
	MaxKVCacheEntries int     // drop cells with (L + MaxTokens)·B above it; 0 = no cap
	// Cells with L + MaxTokens above Context are dropped too: their mean cannot be reached.
	AutoSeqLens bool // L = MinSeqLen·2^k while L + MaxTokens ≤ Context
	MinSeqLen   int  // tokens
	Context     int  // model context, tokens (needed by AutoSeqLens; 0 = unknown)
	MaxTokens   int  // tokens generated per sequence
	// CorpusRows is the rows available (for FirstRow); must be ≥ 1. A cell may have more
	// prompts than rows: host/prompt builds the ones beyond from rotations of the rows.
	CorpusRows int
}

// Dropped is a cell left out of the run, with the reason.
type Dropped struct {
	SeqLen int    `json:"seq_len"`
	Batch  int    `json:"batch"`
	Reason string `json:"reason"`
}

// Build returns the cells in run order — the grid with L ascending then B ascending, then the
// explicit pairs in file order, duplicates removed — and the cells the KV-cache cap dropped.
// It fails when no cell is left or AutoSeqLens has no context to grow to.
func Build(s Spec) ([]Cell, []Dropped, error) {
	if s.CorpusRows < 1 {
		return nil, nil, fmt.Errorf("matrix: corpus has no rows")
	}
	lens := append([]int(nil), s.SeqLens...)
	if s.AutoSeqLens {
		if s.Context <= 0 {
			return nil, nil, &KeyError{"matrix.auto_seq_lens", fmt.Errorf("matrix: [matrix.auto_seq_lens] needs the model context, which is unknown (set [context])")}
		}
		lens = lens[:0]
		for l := s.MinSeqLen; l+s.MaxTokens <= s.Context; l *= 2 {
			lens = append(lens, l)
		}
		if len(lens) == 0 {
			return nil, nil, &KeyError{"matrix.min_seq_len", fmt.Errorf("matrix: [matrix.min_seq_len] %d + max_tokens %d exceeds the context %d", s.MinSeqLen, s.MaxTokens, s.Context)}
		}
	}
	sort.Ints(lens)
	batches := append([]int(nil), s.BatchSizes...)
	sort.Ints(batches)
	type lb struct{ l, b int }
	var order []lb
	seen := map[lb]bool{}
	add := func(l, b int) {
		k := lb{l, b}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	for _, l := range lens {
		for _, b := range batches {
			add(l, b)
		}
	}
	for _, p := range s.Pairs {
		add(p[0], p[1])
	}
	var cells []Cell
	var dropped []Dropped
	row := 0
	for _, k := range order {
		if s.Context > 0 && k.l+s.MaxTokens > s.Context {
			dropped = append(dropped, Dropped{k.l, k.b, fmt.Sprintf("L + max_tokens = %d exceeds the model context %d", k.l+s.MaxTokens, s.Context)})
			continue
		}
		if s.MaxKVCacheEntries > 0 && (k.l+s.MaxTokens)*k.b > s.MaxKVCacheEntries {
			dropped = append(dropped, Dropped{k.l, k.b, fmt.Sprintf("(L + max_tokens)·B = %d > max_kv_cache_entries %d",
				(k.l+s.MaxTokens)*k.b, s.MaxKVCacheEntries)})
			continue
		}
		cells = append(cells, Cell{Index: len(cells), SeqLen: k.l, Batch: k.b, FirstRow: row})
		row = (row + k.b) % s.CorpusRows
	}
	if len(cells) == 0 {
		key := "matrix.seq_lens"
		if strings.Contains(dropped[0].Reason, "max_kv_cache_entries") {
			key = "matrix.max_kv_cache_entries"
		}
		return nil, dropped, &KeyError{key, fmt.Errorf("matrix: no cells left (%d dropped: %s)", len(dropped), dropped[0].Reason)}
	}
	return cells, dropped, nil
}

// KeyError is an error of Build caused by one bench.toml key (dotted, such as
// "matrix.seq_lens"), so that the message can name the key's line or the flag that set it.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() }

// Unwrap returns the error without its key.
func (e *KeyError) Unwrap() error { return e.Err }
