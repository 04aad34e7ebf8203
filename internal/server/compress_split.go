package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzhttp/writer"
	"github.com/klauspost/compress/gzhttp/writer/gzkp"

	"github.com/toolq/toolq/internal/parallel"
)

// Responses of at least splitMin bytes are gzipped on every processor at once: the overview of
// a thousand queues is a megabyte of HTML, and gzip, one core's work, was a fifth of its time
// (docs/performance.md, Compression). Each processor compresses one stretch of the response,
// primed with the 32 KB before it, so that its matches may reach back as a serial compressor's
// would; the stretches, each ended on a byte boundary, make one deflate stream in one gzip
// member, which any gzip reader reads, and nearly as small as the serial one.
const (
	splitMin   = 256 << 10 // below it, one core compresses faster than two hand over
	splitBytes = 128 << 10 // the smallest stretch
	// splitMax is the most a response is held before it is compressed: a larger one (a large
	// export) streams through the serial compressor instead, as it comes.
	splitMax = 8 << 20
	// deflateWindow is how far back a deflate match reaches.
	deflateWindow = 32 << 10
)

// splitGzip is gzhttp's compressor, as the option to use: gzip from klauspost/compress,
// responses of splitMin and more compressed on every processor.
func splitGzip() writer.GzipWriterFactory {
	return writer.GzipWriterFactory{Levels: gzkp.Levels, New: newSplitWriter}
}

// splitWriter holds what the handler writes until it closes, then compresses it at once on
// every processor when it is large, or through the serial compressor when it is not. A flush
// (a handler streaming), or more than splitMax, turns it into the serial compressor for the
// rest of the response.
type splitWriter struct {
	dst    io.Writer
	level  int
	held   *[]byte           // what was written, while held
	serial writer.GzipWriter // once streaming
}

func newSplitWriter(dst io.Writer, level int) writer.GzipWriter {
	return &splitWriter{dst: dst, level: level, held: heldBuffers.get(newHeldBuffer)}
}

// heldBuffers keep the held responses' memory from one response to the next, two at once.
var heldBuffers = newFreeList[*[]byte](2)

func newHeldBuffer() *[]byte { b := make([]byte, 0, 64<<10); return &b }

func (w *splitWriter) Write(p []byte) (int, error) {
	if w.serial != nil {
		return w.serial.Write(p)
	}
	if len(*w.held)+len(p) > splitMax {
		if err := w.stream(); err != nil {
			return 0, err
		}
		return w.serial.Write(p)
	}
	*w.held = append(*w.held, p...)
	return len(p), nil
}

func (w *splitWriter) Flush() error {
	if w.serial == nil {
		if err := w.stream(); err != nil {
			return err
		}
	}
	return w.serial.Flush()
}

func (w *splitWriter) Close() error {
	if w.serial != nil {
		return w.serial.Close()
	}
	defer w.release()
	held := *w.held
	if len(held) < splitMin || w.level < flate.BestSpeed || runtime.GOMAXPROCS(0) == 1 {
		z := gzkp.NewWriter(w.dst, w.level)
		if _, err := z.Write(held); err != nil {
			_ = z.Close()
			return err
		}
		return z.Close()
	}
	return gzipSplit(w.dst, w.level, held)
}

// stream hands what is held to the serial compressor, which compresses the rest as it comes.
func (w *splitWriter) stream() error {
	defer w.release()
	w.serial = gzkp.NewWriter(w.dst, w.level)
	_, err := w.serial.Write(*w.held)
	return err
}

func (w *splitWriter) release() {
	if w.held != nil {
		if cap(*w.held) <= maxKeptRenderBuffer { // as large as the pages' buffers that are kept
			*w.held = (*w.held)[:0]
			heldBuffers.put(w.held)
		}
		w.held = nil
	}
}

// gzipHeader is a gzip member's header as klauspost's writer writes it without a name, time or
// comment: deflate, no flags, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// gzipSplit writes data to dst as one gzip member, its deflate stream compressed in one
// stretch per processor (of at least splitBytes each).
func gzipSplit(dst io.Writer, level int, data []byte) error {
	parts := max(1, min(runtime.GOMAXPROCS(0), len(data)/splitBytes))
	out := make([]*bytes.Buffer, parts)
	err := parallel.Stretches(context.Background(), parts, func(_ context.Context, from, to int) error {
		for i := from; i < to; i++ {
			start, end := i*len(data)/parts, (i+1)*len(data)/parts
			out[i] = compressedBuffers.Get().(*bytes.Buffer)
			z := deflaters[level].get(func() *flate.Writer { return newDeflater(level) })
			z.ResetDict(out[i], data[max(0, start-deflateWindow):start])
			if _, err := z.Write(data[start:end]); err != nil {
				return err
			}
			// Every stretch but the last ends with an empty stored block, on a byte boundary,
			// where the next one's blocks follow; the last ends the stream.
			finish := z.Flush
			if i == parts-1 {
				finish = z.Close
			}
			if err := finish(); err != nil {
				return err
			}
			deflaters[level].put(z)
		}
		return nil
	})
	defer func() {
		for _, b := range out {
			if b != nil {
				b.Reset()
				compressedBuffers.Put(b)
			}
		}
	}()
	if err != nil {
		return err
	}
	if _, err := dst.Write(gzipHeader); err != nil {
		return err
	}
	for _, b := range out {
		if _, err := dst.Write(b.Bytes()); err != nil {
			return err
		}
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc32.ChecksumIEEE(data)) // a tenth of a millisecond a megabyte
	binary.LittleEndian.PutUint32(trailer[4:], uint32(len(data)))        // ISIZE: the size modulo 2³²
	_, err = dst.Write(trailer[:])
	return err
}

// compressedBuffers keep the stretches' compressed bytes from one response to the next.
var compressedBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// deflaters keep deflate compressors by level (1 to 9, as splitWriter.Close checked), one per
// processor: a compressor at level 5 is a few hundred kilobytes to make.
var deflaters [flate.BestCompression + 1]freeList[*flate.Writer]

func init() {
	for level := range deflaters {
		deflaters[level] = newFreeList[*flate.Writer](runtime.GOMAXPROCS(0))
	}
}

// newDeflater makes a compressor at level, from 1 to 9.
func newDeflater(level int) *flate.Writer {
	z, err := flate.NewWriter(nil, level)
	if err != nil {
		panic(err) // a level from 1 to 9 is never refused
	}
	return z
}
