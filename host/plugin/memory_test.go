package plugin

import (
	"bytes"
	"testing"

	"github.com/tetratelabs/wazero/experimental"
)

// checkLinearMemory grows a linear memory of 4 pages of 64 KiB at most, as wazero does, and
// checks what a plugin relies on: the first size bytes are usable and keep their contents
// across growths, growth beyond the maximum fails, and after Free the memory is gone.
func checkLinearMemory(t *testing.T, m experimental.LinearMemory) {
	t.Helper()
	const page = 64 << 10
	b := m.Reallocate(page)
	if len(b) != page {
		t.Fatalf("Reallocate(1 page): %d bytes", len(b))
	}
	for i := range b {
		b[i] = byte(i % 251)
	}
	b = m.Reallocate(3 * page)
	if len(b) != 3*page {
		t.Fatalf("Reallocate(3 pages): %d bytes", len(b))
	}
	for i := range page {
		if b[i] != byte(i%251) {
			t.Fatalf("byte %d = %d after growing, want %d", i, b[i], byte(i%251))
		}
	}
	if !bytes.Equal(b[page:], make([]byte, 2*page)) {
		t.Fatal("the grown pages are not zero")
	}
	b[3*page-1] = 7 // writable to its end
	if got := m.Reallocate(5 * page); got != nil {
		t.Fatalf("Reallocate beyond the maximum returned %d bytes, want nil", len(got))
	}
	if b = m.Reallocate(4 * page); len(b) != 4*page || b[3*page-1] != 7 || b[0] != 0 {
		t.Fatalf("Reallocate(4 pages) after a failed growth: %d bytes", len(b))
	}
	m.Free()
}

func TestHeapMemory(t *testing.T) {
	checkLinearMemory(t, &heapMemory{max: 4 << 16})
}
