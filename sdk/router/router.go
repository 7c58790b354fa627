// Package router lets a Go plugin provide a routing policy (ABI kind "router"): in routed mode
// the host asks it which worker each of a cell's B prompts goes to, and, if the plugin declares
// the "completions" capability, tells it when each request finished.
package router

import (
	"encoding/binary"
	"strconv"

	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
)

// Completion is one finished request reported through genload_on_complete.
type Completion struct {
	// Worker is the index the request was routed to.
	Worker int
	// PromptLen and CompletionTokens are the request's prompt and generated lengths in tokens.
	PromptLen, CompletionTokens int
	// Failed is true when the request ended in an error.
	Failed bool
}

// Policy is a routing policy.
type Policy struct {
	// Route returns, for each prompt length (tokens), the index of the worker in [0, workers)
	// that serves it; the result must have len(promptLens) entries. Required. promptLens is
	// reused by the SDK after Route returns: copy it to keep it. The result may be built in
	// Scratch(len(promptLens)) instead of a new slice (allocation is slow inside wasm); a
	// policy that keeps state across calls must keep copies, not these slices.
	Route func(promptLens []int, workers int) ([]int, error)
	// Complete receives finished requests in batches (stateful policies such as
	// least-outstanding). Optional; set it if and only if Info.Caps has sdk.CapCompletions.
	Complete func(done []Completion) error
}

var policy Policy

// lensBuf backs the prompt lengths passed to Route; scratch backs Scratch, scratchUsed of them
// handed out in the current Route call.
var (
	lensBuf     guest.Ints
	scratch     []guest.Ints
	scratchUsed int
)

// Scratch returns n ints of storage for the Route function, e.g. for its result (allocation is
// slow inside wasm). Each call during one Route call returns separate storage; all of it is
// reused by the next Route call, so it is valid only until Route returns: return it or use it,
// never keep it (copy what you need to keep). Its initial contents are undefined.
func Scratch(n int) []int {
	if scratchUsed == len(scratch) {
		scratch = append(scratch, guest.Ints{})
	}
	scratchUsed++
	return scratch[scratchUsed-1].Get(n)
}

// Register declares the module's plugin. Call it from an init function. setup runs once at
// genload_init with the run seed and config (decode it with env.Decode) and returns the policy.
func Register(info guest.Info, setup func(env *guest.Env) (Policy, error)) {
	guest.Register(abi.KindRouter, info, func(env *guest.Env) error {
		p, err := setup(env)
		if err != nil {
			return err
		}
		if p.Route == nil {
			return guest.Error(abi.PluginError, "setup returned a Policy without Route")
		}
		if (p.Complete != nil) != guest.HasCap(abi.CapCompletions) {
			return guest.Error(abi.PluginError, "Policy.Complete must be set exactly when Info.Caps lists "+strconv.Quote(abi.CapCompletions))
		}
		policy = p
		return nil
	})
}

// route implements genload_route after the pointer lookup.
func route(n, workers int32, in, out func(size uint32) ([]byte, error)) int32 {
	return guest.Guard(func() (int32, error) {
		if err := guest.RequireInit(); err != nil {
			return 0, err
		}
		if n < 0 || n > abi.MaxBatch {
			return 0, guest.Error(abi.BadInput, "n = "+strconv.Itoa(int(n))+" outside [0, "+strconv.Itoa(abi.MaxBatch)+"]")
		}
		if workers <= 0 {
			return 0, guest.Error(abi.BadInput, "workers = "+strconv.Itoa(int(workers))+", want > 0")
		}
		src, err := in(uint32(n) * 4)
		if err != nil {
			return 0, err
		}
		lens := lensBuf.Get(int(n))
		guest.GetU32s(lens, src)
		dst, err := out(uint32(n) * 4)
		if err != nil {
			return 0, err
		}
		scratchUsed = 0
		idx, err := policy.Route(lens, int(workers))
		if err != nil {
			return 0, err
		}
		if i := guest.PutU32s(dst, idx[:min(len(idx), int(n))]); i >= 0 {
			return 0, guest.Error(abi.PluginError, "worker index "+strconv.Itoa(idx[i])+" at position "+strconv.Itoa(i)+" does not fit in a u32")
		}
		return int32(len(idx)), nil
	})
}

// complete implements genload_on_complete after the pointer lookup.
func complete(n int32, recs func(size uint32) ([]byte, error)) int32 {
	return guest.Guard(func() (int32, error) {
		if err := guest.RequireInit(); err != nil {
			return 0, err
		}
		if policy.Complete == nil {
			return 0, guest.Error(abi.Unsupported, "plugin does not declare "+strconv.Quote(abi.CapCompletions))
		}
		if n < 0 || n > abi.MaxBatch {
			return 0, guest.Error(abi.BadInput, "n = "+strconv.Itoa(int(n))+" outside [0, "+strconv.Itoa(abi.MaxBatch)+"]")
		}
		b, err := recs(uint32(n) * abi.CompletionRecordSize)
		if err != nil {
			return 0, err
		}
		done := make([]Completion, n)
		for i := range done {
			r := b[i*abi.CompletionRecordSize:]
			done[i] = Completion{
				Worker:           int(binary.LittleEndian.Uint32(r)),
				PromptLen:        int(binary.LittleEndian.Uint32(r[4:])),
				CompletionTokens: int(binary.LittleEndian.Uint32(r[8:])),
				Failed:           binary.LittleEndian.Uint32(r[12:])&abi.CompletionFailed != 0,
			}
		}
		return 0, policy.Complete(done)
	})
}
