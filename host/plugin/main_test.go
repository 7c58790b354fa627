package plugin

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
)

// testSeed is the run seed of the shared test host.
const testSeed = 42

var (
	sharedOnce sync.Once
	shared     *Host
	sharedErr  error
)

// testHost returns a Host shared by the package's tests (compiled modules are cached in it), with
// the shipped plugins' directory as its search directory.
func testHost(t testing.TB) *Host {
	t.Helper()
	dir := testplugins.Dir(t)
	sharedOnce.Do(func() {
		shared, sharedErr = NewHost(context.Background(), Options{Dir: dir, CacheDir: testplugins.CacheDir(t), Seed: testSeed})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		_ = shared.Close(context.Background())
	}
	os.Exit(code)
}
