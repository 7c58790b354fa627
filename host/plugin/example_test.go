package plugin_test

import (
	"fmt"
	"os"

	"github.com/genload/genload/host/plugin"
)

// The output of `genload lengths --plugin gamma --mean 1000 --batch 4`: gamma's four lengths
// for that cell (sdk/ABI.md §9), their summary and a 3-bin histogram.
func ExampleWriteLengths() {
	_ = plugin.WriteLengths(os.Stdout, []int{122, 481, 1058, 2339}, 3)
	// Output:
	// lengths: 122 481 1058 2339
	// n=4 mean=1000.0 min=122 p50=481 p90=2339 max=2339
	// [   122,    862)   2 ████████████████████████████████████████
	// [   862,   1602)   1 ████████████████████
	// [  1602,   2339]   1 ████████████████████
}

// `--set` flags become the plugin's config table, typed as TOML values.
func ExampleParseSet() {
	cfg, err := plugin.ParseSet([]string{"k=0.9", "normalize=false"})
	fmt.Println(cfg, err)
	// Output: map[k:0.9 normalize:false] <nil>
}
