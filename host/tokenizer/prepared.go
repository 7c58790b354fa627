package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// # The prepared-tables cache
//
// Building a tokenizer from tokenizer.json costs about 0.2 CPU-s for Qwen3 (gunzip of the
// embedded file, reading 150,000 vocabulary entries and merges, resolving the merges to ids,
// filling the tables) and about 60 MB of transient allocation; all of it depends on the file
// alone. The first load of a file writes the BPE model's tables (tables.go) and the rest of
// the file (every component but model.vocab and model.merges, a few kB) to
// <user cache dir>/genload/tokenizer-tables/<SHA-256 of the file>; later loads read them back
// (about 5 MB for Qwen3) and parse only the rest. The file's name is the SHA-256 of the
// tokenizer.json bytes (for the embedded tokenizer, of its gzip file), so an edited file gets
// its own entry; preparedMagic names the layout and the hash functions, and changes with
// them. A file that cannot be read, is truncated, fails its CRC-32C or its checks
// (bpeModel.checkTables) is ignored and rewritten. Without a writable cache directory every
// load builds from the JSON, as before.

// preparedMagic opens every cache file; its version changes whenever the layout, the hash
// functions or the way the tables are built from tokenizer.json change.
const preparedMagic = "genload tokenizer tables v1\n"

// preparedDir returns the cache directory ("" for none); tests point it elsewhere.
var preparedDir = func() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "genload", "tokenizer-tables")
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildCached is build for a tokenizer.json whose SHA-256 is key: from the prepared tables
// when the cache has them, else from source() (the file's bytes), writing the cache.
func buildCached(key [32]byte, name, tjPath string, source func() ([]byte, error), tcPath string, tc []byte, mcPath string, mc []byte) (*Tokenizer, error) {
	if rest, model, err := readPrepared(key); err == nil {
		if spec, err := parseSpec(rest, tjPath); err == nil && model.setOptions(&spec.model) == nil {
			if t, err := assemble(name, tjPath, spec, model, tcPath, tc, mcPath, mc); err == nil {
				t.prepared = true
				return t, nil
			}
		}
		// A cache file whose rest does not build: build from the file, which says why.
	}
	tj, err := source()
	if err != nil {
		return nil, err
	}
	spec, err := parseSpec(tj, tjPath)
	if err != nil {
		return nil, err
	}
	model, err := newBPE(&spec.model)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: [model]: %w", tjPath, err)
	}
	t, err := assemble(name, tjPath, spec, model, tcPath, tc, mcPath, mc)
	if err != nil {
		return nil, err
	}
	_ = writePrepared(key, spec.restJSON(tj), model) // the cache changes speed only
	return t, nil
}

// fileKey is the SHA-256 of r's bytes.
func fileKey(r io.Reader) ([32]byte, error) {
	h := sha256.New()
	var k [32]byte
	if _, err := io.Copy(h, r); err != nil {
		return k, err
	}
	h.Sum(k[:0])
	return k, nil
}

func preparedPath(dir string, key [32]byte) string {
	return filepath.Join(dir, hex.EncodeToString(key[:]))
}

// errNoCache is readPrepared's error when there is no cache directory or no file for a key.
var errNoCache = errors.New("no prepared tables")

// writePrepared writes the cache file of key: the rest of the tokenizer.json and m's tables
// (a temporary file renamed into place, so a reader sees a whole file or none).
func writePrepared(key [32]byte, rest []byte, m *bpeModel) error {
	dir := preparedDir()
	if dir == "" {
		return errNoCache
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, hex.EncodeToString(key[:8])+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing to remove
	crc := crc32.New(castagnoli)
	w := &tableWriter{w: bufio.NewWriterSize(io.MultiWriter(f, crc), 256<<10)}
	w.bytes([]byte(preparedMagic))
	w.bytes(key[:])
	w.u64(uint64(len(rest)))
	w.bytes(rest)
	w.u32(uint32(m.vocabN))
	w.u32(uint32(m.toks.len()))
	w.u32s(m.toks.offs)
	w.bytes([]byte(m.toks.blob))
	for _, id := range m.aliasID {
		w.u32(uint32(id))
	}
	w.u32(uint32(m.vocab.bits))
	w.u32s(m.vocab.slots)
	w.u32(uint32(len(m.merges.pairs)))
	for _, p := range m.merges.pairs {
		w.u32(uint32(p.a))
		w.u32(uint32(p.b))
		w.u32(uint32(p.id))
	}
	w.u32(uint32(m.merges.bits))
	w.u32s(m.merges.slots)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err == nil {
		w.err = binary.Write(f, binary.LittleEndian, crc.Sum32())
	}
	if err := errors.Join(w.err, f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), preparedPath(dir, key))
}

// readPrepared reads the cache file of key: the rest of the tokenizer.json and a model
// holding the tables only (setOptions completes it). errNoCache when there is none; any other
// error means the file is damaged or of another layout.
func readPrepared(key [32]byte) ([]byte, *bpeModel, error) {
	dir := preparedDir()
	if dir == "" {
		return nil, nil, errNoCache
	}
	f, err := os.Open(preparedPath(dir, key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, errNoCache
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	crc := crc32.New(castagnoli)
	r := &tableReader{r: bufio.NewReaderSize(f, 256<<10), crc: crc, left: st.Size() - 4}
	if string(r.bytes(len(preparedMagic))) != preparedMagic || string(r.bytes(32)) != string(key[:]) {
		return nil, nil, fmt.Errorf("prepared tables: wrong header")
	}
	rest := r.bytes(int(r.u64()))
	m := &bpeModel{}
	m.vocabN = int(r.u32())
	nStr := int(r.u32())
	m.toks.offs = r.u32s(nStr + 1)
	if r.err == nil {
		m.toks.blob = r.str(int(m.toks.offs[nStr]))
	}
	if r.err == nil && nStr < m.vocabN {
		r.err = fmt.Errorf("prepared tables: %d strings for %d ids", nStr, m.vocabN)
	}
	m.aliasID = make([]int32, max(0, nStr-m.vocabN))
	for i := range m.aliasID {
		m.aliasID[i] = int32(r.u32())
	}
	m.vocab.bits = uint(r.u32())
	m.vocab.slots = r.u32s(1 << min(m.vocab.bits, 31))
	m.merges.pairs = r.pairs(int(r.u32()))
	m.merges.bits = uint(r.u32())
	m.merges.slots = r.u32s(1 << min(m.merges.bits, 31))
	if r.err != nil {
		return nil, nil, fmt.Errorf("prepared tables: %w", r.err)
	}
	sum := crc.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(r.r, tail[:]); err != nil || binary.LittleEndian.Uint32(tail[:]) != sum || r.left != 0 {
		return nil, nil, fmt.Errorf("prepared tables: checksum or length mismatch")
	}
	for _, id := range m.aliasID {
		if id < 0 || int(id) >= m.vocabN {
			return nil, nil, fmt.Errorf("prepared tables: alias of id %d outside the vocabulary", id)
		}
	}
	if err := m.checkTables(); err != nil {
		return nil, nil, fmt.Errorf("prepared tables: %w", err)
	}
	return rest, m, nil
}

// tableWriter writes little-endian integers, keeping the first error.
type tableWriter struct {
	w   *bufio.Writer
	err error
	b   [8]byte
}

func (w *tableWriter) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *tableWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(w.b[:4], v)
	w.bytes(w.b[:4])
}

func (w *tableWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(w.b[:8], v)
	w.bytes(w.b[:8])
}

func (w *tableWriter) u32s(vs []uint32) {
	for _, v := range vs {
		w.u32(v)
	}
}

// tableReader reads what tableWriter wrote, feeding every byte to crc and refusing a length
// beyond the bytes left in the file (so a damaged length cannot allocate without bound); it
// keeps the first error and returns zero values after it.
type tableReader struct {
	r    *bufio.Reader
	crc  hash.Hash32
	left int64 // bytes before the checksum not read yet
	err  error
}

// take reserves n bytes of the file, false (with r.err set) when fewer are left.
func (r *tableReader) take(n int) bool {
	if r.err == nil && (n < 0 || int64(n) > r.left) {
		r.err = fmt.Errorf("a length of %d bytes exceeds the file", n)
	}
	if r.err != nil {
		return false
	}
	r.left -= int64(n)
	return true
}

func (r *tableReader) fill(b []byte) {
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
		return
	}
	r.crc.Write(b)
}

func (r *tableReader) bytes(n int) []byte {
	if !r.take(n) {
		return nil
	}
	b := make([]byte, n)
	r.fill(b)
	return b
}

// str reads n bytes as a string without a second copy.
func (r *tableReader) str(n int) string {
	if !r.take(n) {
		return ""
	}
	var sb strings.Builder
	sb.Grow(n)
	var buf [32 << 10]byte
	for n > 0 && r.err == nil {
		k := min(n, len(buf))
		r.fill(buf[:k])
		sb.Write(buf[:k])
		n -= k
	}
	return sb.String()
}

func (r *tableReader) u32() uint32 {
	var b [4]byte
	if !r.take(4) {
		return 0
	}
	r.fill(b[:])
	return binary.LittleEndian.Uint32(b[:])
}

func (r *tableReader) u64() uint64 {
	var b [8]byte
	if !r.take(8) {
		return 0
	}
	r.fill(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// u32s reads n integers through a fixed buffer (no byte copy of the whole array).
func (r *tableReader) u32s(n int) []uint32 {
	if !r.take(4 * n) {
		return nil
	}
	out := make([]uint32, n)
	var buf [32 << 10]byte
	for i := 0; i < n && r.err == nil; {
		k := min(n-i, len(buf)/4)
		r.fill(buf[:4*k])
		for j := range k {
			out[i+j] = binary.LittleEndian.Uint32(buf[4*j:])
		}
		i += k
	}
	return out
}

// pairs reads n merges (three integers each).
func (r *tableReader) pairs(n int) []mergePair {
	if !r.take(12 * n) {
		return nil
	}
	out := make([]mergePair, n)
	var buf [12 << 11]byte
	for i := 0; i < n && r.err == nil; {
		k := min(n-i, len(buf)/12)
		r.fill(buf[:12*k])
		for j := range k {
			b := buf[12*j:]
			out[i+j] = mergePair{int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:])), int32(binary.LittleEndian.Uint32(b[8:]))}
		}
		i += k
	}
	return out
}
