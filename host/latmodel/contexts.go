package latmodel

import (
	"fmt"
	"math"
	"strings"
)

// PredictContexts returns the model's per-forward latency (ms) for one decode forward pass of
// batch sequences whose context lengths (prompt + tokens generated so far) have mean meanCtx
// and maximum maxCtx, in tokens — a forward pass a server logged, not a cell. A cell's forward
// passes read, on average over its decode, B·(L̄ + m/2) cached tokens and a longest context of
// L_max + m/2 (m = the model's max_tokens), so the terms are evaluated at L̄ = meanCtx − m/2 and
// L_max = maxCtx − m/2: kv_read at B·meanCtx, kv_tail at maxCtx. outside says where the point
// lies beyond the measured range ("" when within): the prediction is then an extrapolation.
// Errors: a batch below 1 or a context that is not a positive finite number.
func (m *Model) PredictContexts(meanCtx, maxCtx float64, batch int) (ms float64, outside string, err error) {
	if batch < 1 {
		return 0, "", fmt.Errorf("predict: batch size must be ≥ 1, got %d", batch)
	}
	if !(meanCtx > 0) || !(maxCtx >= meanCtx) || math.IsInf(maxCtx, 0) {
		return 0, "", fmt.Errorf("predict: contexts mean %v, max %v tokens: want 0 < mean ≤ max", meanCtx, maxCtx)
	}
	half := float64(m.MaxTokens) / 2
	in := Input{MeanLen: meanCtx - half, MaxLen: maxCtx - half, Batch: batch}
	for _, t := range m.Terms {
		ms += t.Coef * m.x(t.Name, in)
	}
	var why []string
	if in.MeanLen < m.Range.MeanLen[0]*(1-1e-9) || in.MeanLen > m.Range.MeanLen[1]*(1+1e-9) {
		why = append(why, fmt.Sprintf("mean length %.0f not in the measured [%g, %g] tokens", in.MeanLen, m.Range.MeanLen[0], m.Range.MeanLen[1]))
	}
	if batch < m.Range.Batch[0] || batch > m.Range.Batch[1] {
		why = append(why, fmt.Sprintf("batch size %d not in the measured [%d, %d]", batch, m.Range.Batch[0], m.Range.Batch[1]))
	}
	return ms, strings.Join(why, "; "), nil
}
