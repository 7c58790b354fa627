package run

import (
	"slices"
	"testing"
)

func TestClampBoundsEveryLengthAndCountsClamps(t *testing.T) {
	ls := []int{10, 50, 500, 131000, 130972}
	st := clamp(ls, 1000, 50, 130972)
	// 10 → 50 and 131000 → 130972 are clamped; 50 and 130972 are on the bounds already.
	if !slices.Equal(ls, []int{50, 50, 500, 130972, 130972}) || st.Clamped != 2 {
		t.Fatalf("lengths %v, clamped %d", ls, st.Clamped)
	}
	// mean = (50+50+500+130972+130972)/5 = 52508.8
	if st.Min != 50 || st.Max != 130972 || st.Mean != 52508.8 || st.Target != 1000 {
		t.Errorf("stats %+v", st)
	}
}

func TestResolveContextTakesTheSmallestKnown(t *testing.T) {
	cases := []struct {
		cfg, server, tok int
		want             int
		src              string
	}{
		{0, 131072, 40960, 40960, "tokenizer config.json [max_position_embeddings]"},
		{0, 32768, 40960, 32768, "server /v1/models max_model_len"},
		{8192, 32768, 0, 8192, "bench.toml [context]"},
		{0, 0, 0, 0, "unknown"},
	}
	for _, c := range cases {
		n, src := resolveContext(c.cfg, c.server, c.tok, "config.json [max_position_embeddings]")
		if n != c.want || src != c.src {
			t.Errorf("resolveContext(%d, %d, %d) = %d %q, want %d %q", c.cfg, c.server, c.tok, n, src, c.want, c.src)
		}
	}
}
