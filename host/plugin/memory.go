package plugin

// heapMemory is a linear memory of up to max bytes in a Go []byte, grown by copying.
type heapMemory struct {
	buf []byte
	max uint64
}

// Reallocate returns the memory resized to size bytes, its contents kept (nil beyond max).
func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size > uint64(cap(m.buf)) {
		b := make([]byte, size, min(m.max, max(size, 2*uint64(cap(m.buf)))))
		copy(b, m.buf)
		m.buf = b
	}
	m.buf = m.buf[:size]
	return m.buf
}

// Free drops the buffer.
func (m *heapMemory) Free() { m.buf = nil }
