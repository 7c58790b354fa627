// Command badlengths is a deliberately broken length distribution for host/plugin's tests. The
// cell's mean selects the misbehaviour, so one instance can fail and then be called again:
//
//	mean 1: panic in the export (status 2, instance usable)   mean 6: returns n+1 lengths
//	mean 2: out-of-bounds store (trap)                        mean 7: returns a length 0
//	mean 3: os.Exit(7)                                        mean 8: returns max+1
//	mean 4: infinite loop                                     mean 9: panic in another goroutine
//	mean 5: allocates without bound (memory limit)            mean 10: prints to stdout and stderr
//	mean 11: reports what the sandbox exposes (file, env, args, clock, network) as an error
//	other: n copies of mean
package main

import (
	"fmt"
	"net"
	"os"
	"time"
	"unsafe"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/lengths"
)

var spin int

func init() {
	lengths.Register(sdk.Info{Name: "badlengths", Version: "0.0.1"}, func(env *sdk.Env) (lengths.Func, error) {
		if err := env.Decode(&struct{}{}); err != nil {
			return nil, err
		}
		return bad, nil
	})
}

func bad(c lengths.Call) ([]int, error) {
	out := make([]int, c.N)
	for i := range out {
		out[i] = c.Mean
	}
	switch c.Mean {
	case 1:
		fmt.Fprintln(os.Stderr, "about to panic")
		panic("boom")
	case 2:
		p := (*byte)(unsafe.Pointer(uintptr(0xfffffff0)))
		*p = 1
	case 3:
		os.Exit(7)
	case 4:
		for {
			spin++
		}
	case 5:
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 4<<20))
		}
	case 6:
		return append(out, c.Mean), nil
	case 7:
		out[0] = 0
	case 8:
		out[0] = c.Max + 1
	case 10:
		fmt.Println("hello on stdout")
		fmt.Fprintln(os.Stderr, "hello on stderr")
	case 11:
		_, ferr := os.ReadFile("/etc/hostname")
		_, derr := os.ReadDir("/")
		_, nerr := net.Dial("tcp", "127.0.0.1:80")
		return nil, fmt.Errorf("sandbox: file=%v dir=%v env=%d args=%d year=%d net=%v", ferr, derr, len(os.Environ()), len(os.Args), time.Now().Year(), nerr)
	case 9:
		go func() { panic("boom in a goroutine") }()
		time.Sleep(time.Second)
	}
	return out, nil
}

func main() {}
