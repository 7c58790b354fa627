// Package lengths lets a Go plugin provide a prompt-length distribution (ABI kind "lengths"):
// the host asks it for the B prompt lengths of each (mean L, batch B) cell.
package lengths

import (
	"math"
	"strconv"

	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
)

// Call is one genload_lengths request: N lengths (tokens) with target mean Mean, each within
// [Min, Max] (the host clamps and validates too), and Seed, a per-cell seed the host derives from
// the run seed and (Mean, N) so a seeded distribution gives the same lengths for the same cell
// whatever order cells run in.
type Call struct {
	N, Mean, Min, Max int
	Seed              uint64
	// Buf is N ints of scratch the function may fill and return instead of allocating its
	// result (allocation is slow inside wasm). The SDK reuses it for the next call: it is
	// valid only until the function returns, so never keep it or a result built in it (a
	// memo must store a copy). Its initial contents are undefined.
	Buf []int
}

// scratch backs Call.Buf.
var scratch guest.Ints

// Clamp returns v limited to [c.Min, c.Max], the range every returned length must lie in.
func (c Call) Clamp(v int) int { return min(max(v, c.Min), c.Max) }

// Func returns the lengths of one call. It should return exactly c.N values in [c.Min, c.Max];
// the host rejects any other count or range with an error naming the plugin.
type Func func(c Call) ([]int, error)

var fn Func

// Register declares the module's plugin. Call it from an init function. setup runs once at
// genload_init with the run seed and config (decode it with env.Decode; a non-empty config that
// is never decoded is rejected) and returns the function serving every genload_lengths call.
func Register(info guest.Info, setup func(env *guest.Env) (Func, error)) {
	guest.Register(abi.KindLengths, info, func(env *guest.Env) error {
		f, err := setup(env)
		if err != nil {
			return err
		}
		if f == nil {
			return guest.Error(abi.PluginError, "setup returned a nil lengths.Func")
		}
		fn = f
		return nil
	})
}

// export implements genload_lengths after the pointer check: it calls fn and writes
// min(len(result), n) little-endian u32 values to out, returning len(result) so the host sees a
// wrong count.
func export(n, mean, lo, hi int32, seed uint64, out func(size uint32) ([]byte, error)) int32 {
	return guest.Guard(func() (int32, error) {
		if err := guest.RequireInit(); err != nil {
			return 0, err
		}
		if n < 0 || n > abi.MaxBatch {
			return 0, guest.Error(abi.BadInput, "n = "+strconv.Itoa(int(n))+" outside [0, "+strconv.Itoa(abi.MaxBatch)+"]")
		}
		buf, err := out(uint32(n) * 4)
		if err != nil {
			return 0, err
		}
		ls, err := fn(Call{N: int(n), Mean: int(mean), Min: int(lo), Max: int(hi), Seed: seed, Buf: scratch.Get(int(n))})
		if err != nil {
			return 0, err
		}
		if i := guest.PutU32s(buf, ls[:min(len(ls), int(n))]); i >= 0 {
			return 0, guest.Error(abi.PluginError, "length "+strconv.Itoa(ls[i])+" at index "+strconv.Itoa(i)+" does not fit in a u32")
		}
		if len(ls) > math.MaxInt32 {
			return 0, guest.Error(abi.PluginError, "returned "+strconv.Itoa(len(ls))+" lengths")
		}
		return int32(len(ls)), nil
	})
}
