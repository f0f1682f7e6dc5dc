package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// String returns the compressor's name as hello's "compression" list spells it.
func (c Compressor) String() string {
	switch c {
	case CompressorNoop:
		return "noop"
	case CompressorSnappy:
		return "snappy"
	case CompressorZlib:
		return "zlib"
	case CompressorZstd:
		return "zstd"
	default:
		return fmt.Sprintf("compressor %d", uint8(c))
	}
}

// ParseCompressor returns the compressor a hello "compression" entry names ("snappy",
// "zlib", "zstd"); ok is false for names this package cannot serve, "noop" included (MongoDB
// never advertises it).
func ParseCompressor(name string) (c Compressor, ok bool) {
	switch name {
	case "snappy":
		return CompressorSnappy, true
	case "zlib":
		return CompressorZlib, true
	case "zstd":
		return CompressorZstd, true
	default:
		return CompressorNoop, false
	}
}

// compressedPrefixSize is OP_COMPRESSED's fixed part after the header: originalOpcode,
// uncompressedSize and compressorId.
const compressedPrefixSize = 9

// OpCompressed is a decoded OP_COMPRESSED: another message (OP_MSG or OP_QUERY, or OP_REPLY
// from a server) whose body is compressed. Data aliases the frame.
type OpCompressed struct {
	OriginalOpCode OpCode
	// UncompressedSize is the size of the original message without its header.
	UncompressedSize int32
	Compressor       Compressor
	// Data is the compressed original message, header excluded.
	Data []byte
}

// decode decodes an OP_COMPRESSED body (the frame after its header). maxSize bounds the
// original message, header included, before anything is allocated for it.
func (c *OpCompressed) decode(src []byte, maxSize int) error {
	if len(src) < compressedPrefixSize {
		return protocolError("OP_COMPRESSED of %d bytes is truncated", len(src)+HeaderSize)
	}
	c.OriginalOpCode = OpCode(le.Uint32(src))
	c.UncompressedSize = int32(le.Uint32(src[4:]))
	c.Compressor = Compressor(src[8])
	c.Data = src[compressedPrefixSize:]
	if c.OriginalOpCode == OpCodeCompressed {
		return protocolError("OP_COMPRESSED wraps another OP_COMPRESSED")
	}
	if c.UncompressedSize < 0 || int(c.UncompressedSize) > maxSize-HeaderSize {
		return protocolError("OP_COMPRESSED uncompressedSize %d is outside [0, %d]", c.UncompressedSize, maxSize-HeaderSize)
	}
	if c.Compressor > CompressorZstd {
		return protocolError("OP_COMPRESSED names unknown compressor id %d", uint8(c.Compressor))
	}
	return nil
}

// appendTo appends c's fields (everything after the header).
func (c *OpCompressed) appendTo(dst []byte) []byte {
	dst = le.AppendUint32(dst, uint32(c.OriginalOpCode))
	dst = le.AppendUint32(dst, uint32(c.UncompressedSize))
	dst = append(dst, byte(c.Compressor))
	return append(dst, c.Data...)
}

// appendOriginal appends to dst the original message c carries, a complete frame whose
// header repeats h's requestID and responseTo with c's original opcode. It fails unless the
// data decompresses to exactly UncompressedSize bytes.
func (c *OpCompressed) appendOriginal(dst []byte, h Header) ([]byte, error) {
	start := len(dst)
	dst = Header{
		MessageLength: HeaderSize + c.UncompressedSize, RequestID: h.RequestID,
		ResponseTo: h.ResponseTo, OpCode: c.OriginalOpCode,
	}.AppendTo(dst)
	dst, err := decompress(dst, c.Compressor, c.Data, int(c.UncompressedSize))
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// AppendCompressed appends to dst frame (a complete uncompressed message) wrapped in an
// OP_COMPRESSED with the same requestID and responseTo, its body compressed with c.
func AppendCompressed(dst []byte, c Compressor, frame []byte) ([]byte, error) {
	h, body, ok := ReadHeader(frame)
	if !ok {
		return dst, errors.New("wire: AppendCompressed: frame is shorter than a header")
	}
	start, dst := appendHeaderStart(dst, h.RequestID, h.ResponseTo, OpCodeCompressed)
	dst = le.AppendUint32(dst, uint32(h.OpCode))
	dst = le.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, byte(c))
	dst, err := compress(dst, c, body)
	if err != nil {
		return dst[:start], err
	}
	return finishMessage(dst, start), nil
}

// compress appends src compressed with c to dst.
func compress(dst []byte, c Compressor, src []byte) ([]byte, error) {
	switch c {
	case CompressorNoop:
		return append(dst, src...), nil
	case CompressorSnappy:
		dst = slices.Grow(dst, snappy.MaxEncodedLen(len(src)))
		out := snappy.Encode(dst[len(dst):cap(dst)], src)
		return dst[:len(dst)+len(out)], nil
	case CompressorZlib:
		return zlibCompress(dst, src)
	case CompressorZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	default:
		return dst, fmt.Errorf("wire: unknown compressor id %d", uint8(c))
	}
}

// maxZlibRatio bounds how much deflate can expand its input (about 1032:1), so that a
// tiny zlib body cannot make the server allocate a large uncompressedSize.
const maxZlibRatio = 1100

// decompress appends exactly n bytes, src decompressed with c, to dst; it fails when src
// does not decompress to n bytes. Memory is bounded by n, never by what src claims, and n is
// checked against what src can hold before anything is allocated where the format allows.
func decompress(dst []byte, c Compressor, src []byte, n int) ([]byte, error) {
	if err := checkDecompressedSize(c, src, n); err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	switch c {
	case CompressorNoop:
		copy(out, src)
	case CompressorSnappy:
		if _, err := snappy.Decode(out, src); err != nil {
			return dst, fmt.Errorf("wire: snappy: %w", err)
		}
	case CompressorZlib:
		if err := zlibDecompress(out, src); err != nil {
			return dst, err
		}
	case CompressorZstd:
		got, err := zstdDecoder().DecodeAll(src, out[:0])
		if err != nil {
			return dst, fmt.Errorf("wire: zstd: %w", err)
		}
		if len(got) != n {
			return dst, fmt.Errorf("wire: zstd body decodes to %d bytes, uncompressedSize says %d", len(got), n)
		}
	default:
		return dst, fmt.Errorf("wire: unknown compressor id %d", uint8(c))
	}
	return dst[:len(dst)+n], nil
}

// checkDecompressedSize refuses an uncompressedSize n that src cannot decompress to, from
// what the format tells without decompressing: the exact size for noop and snappy, the
// frame's content size for zstd when it is present, the largest ratio for zlib.
func checkDecompressedSize(c Compressor, src []byte, n int) error {
	switch c {
	case CompressorNoop:
		if len(src) != n {
			return fmt.Errorf("wire: noop-compressed body has %d bytes, uncompressedSize says %d", len(src), n)
		}
	case CompressorSnappy:
		dl, err := snappy.DecodedLen(src)
		if err != nil {
			return fmt.Errorf("wire: snappy body: %w", err)
		}
		if dl != n {
			return fmt.Errorf("wire: snappy body decodes to %d bytes, uncompressedSize says %d", dl, n)
		}
	case CompressorZlib:
		if n > maxZlibRatio*len(src)+1024 {
			return fmt.Errorf("wire: a %d-byte zlib body cannot hold uncompressedSize %d", len(src), n)
		}
	case CompressorZstd:
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return fmt.Errorf("wire: zstd: %w", err)
		}
		if h.HasFCS && h.FrameContentSize != uint64(n) {
			return fmt.Errorf("wire: zstd frame holds %d bytes, uncompressedSize says %d", h.FrameContentSize, n)
		}
	}
	return nil
}

// zstdEncoder returns the shared zstd encoder, created on first use (creating one is
// expensive). EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // NB: only invalid options fail, and these are constants
	}
	return enc
})

// zstdDecoder returns the shared zstd decoder, created on first use. DecodeAll is safe for
// concurrent use and decodes no more than the capacity it is given.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxMessageSize),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(err) // NB: only invalid options fail, and these are constants
	}
	return dec
})

// appendWriter is an io.Writer that appends to a slice, so that zlib output lands in the
// caller's buffer.
type appendWriter struct{ b []byte }

// Write appends p.
func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// zlibWriter is a pooled zlib compressor and its output buffer.
type zlibWriter struct {
	out appendWriter
	w   *zlib.Writer
}

// zlibWriters pools zlib compressors, which allocate large tables when created.
var zlibWriters = sync.Pool{New: func() any {
	zw := &zlibWriter{}
	zw.w, _ = zlib.NewWriterLevel(&zw.out, zlib.DefaultCompression) // the level is valid
	return zw
}}

// zlibCompress appends src zlib-compressed to dst.
func zlibCompress(dst, src []byte) ([]byte, error) {
	zw := zlibWriters.Get().(*zlibWriter)
	defer zlibWriters.Put(zw)
	zw.out.b = dst
	zw.w.Reset(&zw.out)
	_, err := zw.w.Write(src)
	if err == nil {
		err = zw.w.Close()
	}
	dst, zw.out.b = zw.out.b, nil
	return dst, err
}

// zlibReader is a pooled zlib decompressor and the reader it reads from.
type zlibReader struct {
	src bytes.Reader
	r   io.ReadCloser // nil until the first valid stream
	one [1]byte       // probes for bytes past uncompressedSize (here, so that it does not escape)
}

// zlibReaders pools zlib decompressors.
var zlibReaders = sync.Pool{New: func() any { return new(zlibReader) }}

// zlibDecompress fills out with src decompressed, and fails unless the stream holds exactly
// len(out) bytes and its checksum matches.
func zlibDecompress(out, src []byte) error {
	zr := zlibReaders.Get().(*zlibReader)
	defer zlibReaders.Put(zr)
	zr.src.Reset(src)
	var err error
	if zr.r == nil {
		zr.r, err = zlib.NewReader(&zr.src)
	} else {
		err = zr.r.(zlib.Resetter).Reset(&zr.src, nil)
	}
	if err != nil {
		zr.r = nil
		return fmt.Errorf("wire: zlib: %w", err)
	}
	if _, err := io.ReadFull(zr.r, out); err != nil {
		return fmt.Errorf("wire: zlib body is shorter than uncompressedSize %d: %w", len(out), err)
	}
	switch k, err := io.ReadFull(zr.r, zr.one[:]); {
	case k > 0:
		return fmt.Errorf("wire: zlib body is longer than uncompressedSize %d", len(out))
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("wire: zlib: %w", err)
	}
	return nil
}
