package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	kpgzip "github.com/klauspost/compress/gzip"
)

// pageLike is n bytes of HTML shaped like the overview's rows: alike, not equal.
func pageLike(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `<tr id="queue-row-%d" class="health-ok"><th scope="row"><a href="/queues/tool-calls-%04d">tool-calls-%04d</a></th><td class="num">%d</td><td><svg class="spark" viewBox="0 0 100 24"><polyline points="0,%d 2,%d 3,5"></polyline></svg></td></tr>`, i, i, i, i%40, i%7, i%11)
	}
	return b.Bytes()[:n]
}

// noise is n bytes that do not compress.
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// gzipSerial appends data to dst as one gzip member made by one compressor, the server's own.
func gzipSerial(dst *bytes.Buffer, data []byte) {
	zw, _ := kpgzip.NewWriterLevel(dst, compressLevel)
	zw.Write(data)
	zw.Close()
}

// gunzipOne reads z as exactly one gzip member, as a browser reads a response, and fails on
// anything after it.
func gunzipOne(t *testing.T, z []byte) []byte {
	t.Helper()
	r := bytes.NewReader(z)
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the gzip member", r.Len())
	}
	return got
}

// compressSplit writes data through a splitWriter in writes of at most chunk bytes, flushing
// after the first when flush is set.
func compressSplit(t *testing.T, data []byte, chunk int, flush bool) []byte {
	t.Helper()
	var out bytes.Buffer
	w := newSplitWriter(&out, compressLevel)
	for i := 0; i < len(data); i += chunk {
		if _, err := w.Write(data[i:min(i+chunk, len(data))]); err != nil {
			t.Fatal(err)
		}
		if flush && i == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSplitGzipReadsBackAsOneMember: whatever the size, the processors and the way it is
// written (at once, in small writes, flushed as a stream does, past what is held), a response
// reads back whole from one gzip member with the standard library's reader, which checks the
// checksum and the size.
func TestSplitGzipReadsBackAsOneMember(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	sizes := []int{0, 1, 1000, splitMin - 1, splitMin, splitMin + 1, 1 << 20, 3*splitBytes + 7}
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range sizes {
			for name, data := range map[string][]byte{"html": pageLike(n), "noise": noise(n)} {
				for _, chunk := range []int{max(n, 1), 4096} {
					for _, flush := range []bool{false, true} {
						got := gunzipOne(t, compressSplit(t, data, chunk, flush))
						if !bytes.Equal(got, data) {
							t.Fatalf("procs %d, %d bytes of %s in writes of %d, flushed %v: read back %d bytes, not the same",
								procs, n, name, chunk, flush, len(got))
						}
					}
				}
			}
		}
	}
	// More than is held streams through the serial compressor.
	big := pageLike(splitMax + splitMin)
	if got := gunzipOne(t, compressSplit(t, big, 1<<20, false)); !bytes.Equal(got, big) {
		t.Fatal("a response larger than splitMax reads back different")
	}
}

// TestSplitGzipIsAsSmallAsSerial: priming each stretch with the bytes before it keeps the
// split stream within 1% of what one compressor makes of the same page.
func TestSplitGzipIsAsSmallAsSerial(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	page := pageLike(1 << 20)
	var split, serial bytes.Buffer
	if err := gzipSplit(&split, compressLevel, page); err != nil {
		t.Fatal(err)
	}
	gzipSerial(&serial, page)
	if split.Len() > serial.Len()*101/100 {
		t.Errorf("split %d bytes, serial %d: more than 1%% larger", split.Len(), serial.Len())
	}
	// Unprimed, the second stretch would start from nothing: check the priming is what keeps
	// it small, by comparing with two members compressed apart.
	var apart bytes.Buffer
	for _, half := range [][]byte{page[:len(page)/2], page[len(page)/2:]} {
		gzipSerial(&apart, half)
	}
	if split.Len() >= apart.Len() {
		t.Errorf("split %d bytes, not smaller than two halves compressed apart (%d)", split.Len(), apart.Len())
	}
}

// TestSplitGzipReadByZlib: zlib, which browsers decode gzip responses with, reads a split
// stream whole as one member. Python's zlib module is zlib itself.
func TestSplitGzipReadByZlib(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no python3 on PATH (.ci/run installs it)")
		}
		t.Skip("no python3 on PATH, to read with zlib; skipping (.ci/run installs it)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	page := pageLike(1<<20 + 12345)
	var z bytes.Buffer
	if err := gzipSplit(&z, compressLevel, page); err != nil {
		t.Fatal(err)
	}
	const script = `
import sys, zlib
d = zlib.decompressobj(16 + zlib.MAX_WBITS)
out = d.decompress(sys.stdin.buffer.read())
if not d.eof or d.unused_data:
    sys.exit("not one whole gzip member: eof %s, %d bytes after" % (d.eof, len(d.unused_data)))
sys.stdout.buffer.write(out)
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = &z
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zlib: %v: %s", err, stderr.String())
	}
	if !bytes.Equal(out, page) {
		t.Fatalf("zlib read back %d bytes, not the %d written", len(out), len(page))
	}
}

// BenchmarkGzipPage gzips a megabyte of row-like HTML as the overview of a thousand queues is,
// with one compressor and split over the processors, and reports the size each sends.
func BenchmarkGzipPage(b *testing.B) {
	page := pageLike(1 << 20)
	for _, mode := range []string{"serial", "split"} {
		b.Run(mode, func(b *testing.B) {
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if mode == "split" {
					if err := gzipSplit(&out, compressLevel, page); err != nil {
						b.Fatal(err)
					}
					continue
				}
				gzipSerial(&out, page)
			}
			b.ReportMetric(float64(out.Len())/1024, "KB")
		})
	}
}
